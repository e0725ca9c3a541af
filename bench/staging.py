"""`python -m bench.staging`: staging many snapshots on one process against two.

A range of partitions is one Dagster step; the step stages its snapshots on up to
`LIGER_STAGING_WORKERS` processes (pipelines.ingest.stage_pool), which start only once staging the rest in the
run's process would take longer than `LIGER_STAGING_PARALLEL_AFTER_S` (15 s). This measures that
step's work, the whole staging of a history, on one worker and with two allowed, for the
real history (the bundle in ../shared, or --source) and for a synthetic git
history of --snapshots commits. Each staging starts from an empty warehouse with
the source already cloned, so only staging is timed. Wall times and their ratio
(one worker / two: above 1 is faster on two) are printed, and a JSON object with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench import synthetic
from pipelines.core import settings
from pipelines.ingest.steps import stage_new, sync

DEFAULT_BUNDLE = settings.PROJECT_ROOT.parent / "shared" / "liger-data" / "liger-benchmark-data.bundle"
DATA = "benchmark/data/all_benchmark_data.csv"


def synthetic_history(root: Path, snapshots: int, rows: int) -> Path:
    """A git repository whose `snapshots` commits each write another synthetic CSV of `rows` rows."""
    repo = root / "synthetic-upstream"
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    subprocess.run(["git", "init", "--quiet", "--initial-branch", "main", str(repo)], check=True)
    for index in range(snapshots):
        synthetic.write_csv(repo / DATA, rows, seed=index)
        subprocess.run(["git", "-C", str(repo), "add", DATA], check=True)
        subprocess.run(["git", "-C", str(repo), "commit", "--quiet", "-m", f"run {index}"], check=True, env=env)
    return repo


def time_staging(source: Path, work: Path, workers: int) -> tuple[float, int]:
    """(wall seconds, snapshots staged) of staging every snapshot of `source` into a new warehouse."""
    settings_ = settings.for_source(str(source), cache_dir=work / "cache")
    warehouse = work / f"warehouse-{workers}"
    shutil.rmtree(warehouse, ignore_errors=True)
    listing = sync(warehouse, settings_)
    started = time.perf_counter()
    report = stage_new(warehouse, settings_, listing, workers=workers)
    return time.perf_counter() - started, len(report.staged)


def compare(name: str, source: Path, work: Path) -> dict:
    one, staged = time_staging(source, work, 1)
    two, _ = time_staging(source, work, 2)
    print(f"{name}: {staged} snapshots staged in {one:.2f} s on one worker, {two:.2f} s on two: {one / two:.2f}x")
    return {"snapshots": staged, "one_worker_s": one, "two_workers_s": two, "speedup": one / two}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.staging", description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=200, help="commits of the synthetic history (default 200)")
    parser.add_argument("--rows", type=int, default=2000, help="rows of each synthetic snapshot (default 2000)")
    parser.add_argument("--source", type=Path, default=DEFAULT_BUNDLE, help="the real history (default: the shared bundle)")
    parser.add_argument("--no-history", action="store_true", help="skip the real history")
    parser.add_argument("--json", action="store_true", help="also print one JSON object with the figures")
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} cores")
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        if not args.no_history:
            figures["real_history"] = compare("real history", args.source, work / "real")
        repo = synthetic_history(work, args.snapshots, args.rows)
        figures["synthetic"] = compare(f"synthetic history ({args.rows} rows each)", repo, work / "synthetic")
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
