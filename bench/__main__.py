"""`python -m bench --rows N`: how close the pipeline runs to what the machine allows.

Every phase runs in a fresh process of its own (its peak RSS and CPU time are
that process's alone, read with os.wait4) and is set against a floor measured
in the same run:

- normalize: a synthetic Liger CSV of N rows (bench.synthetic, cached
  under --data-dir) ingested as the pipeline ingests a CSV source (sync, stage,
  assemble and commit the SPEC tables), against polars reading the same file
  and writing it as zstd Parquet;
- materialize and no-change re-run: `python -m pipelines materialize` of the
  real history (the bundle in ../shared, or --source), against three trivial
  assets materialized in-process by Dagster with the same instance config;
- one new CI folder: the same history built with gh-pages' newest folder held
  back (bench.new_folder), then materialized again with it, against the clean
  build of the whole history above;
- statistics: database_build.build_database over the normalized warehouse; its
  statistics SQL is set against one DuckDB GROUP BY with two quantiles over the
  same runs table; the same build with every table copied in (the design not
  kept) is measured beside it, and the README's example queries on both;
- the whole ingest (normalization, then the database build) again at each of
  --scales, for its cost per million rows.

The phases are in bench/phases.py, the figures in bench/report.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from bench import new_folder
from bench.phases import PHASES
from bench.report import (
    BUILD,
    BUILD_COPIES,
    CSV_FLOOR,
    DAGSTER_FLOOR,
    HELD_BACK,
    MATERIALIZE,
    NEW_FOLDER,
    NOOP,
    NORMALIZE,
    QUERIES,
    QUERIES_COPIES,
    READ_ALONE,
    SERIES,
    SERIES_FLOOR,
    STATS_FLOOR,
    STATS_OUTPUT,
    STATS_SQL,
    STATS_SQL_COPIES,
    STORE_ALONE,
    Phase,
    change_points_line,
    dagster_runs_line,
    new_folder_line,
    ratios,
    rss_growth_line,
    stats_parts_line,
    table,
    target_lines,
)
from pipelines.core import layout, settings

# Upstream with both streams (main's benchmark/data/ and gh-pages' CI history), else main alone.
DEFAULT_BUNDLE = next(
    (
        path
        for path in (
            settings.PROJECT_ROOT.parent / "shared" / "liger-data" / name
            for name in ("liger-upstream.bundle", "liger-benchmark-data.bundle")
        )
        if path.exists()
    ),
    settings.PROJECT_ROOT.parent / "shared" / "liger-data" / "liger-upstream.bundle",
)
# The sizes the whole ingest is also measured at (those below --rows), for its cost per million rows.
DEFAULT_SCALES = (1_000_000, 3_000_000)


# ---------------------------------------------------------------- measuring


def measure(name: str, command: list[str], env: dict[str, str] | None = None, floor: str | None = None, rows: int | None = None) -> Phase:
    """Run `command` in a new process; its wall time, CPU time and peak RSS, and what it printed last as JSON."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode(errors="replace")
    if process.returncode != 0:
        raise RuntimeError(f"phase {name} failed (exit {process.returncode}):\n{text[-3000:]}")
    detail = _last_json(text)
    return Phase(name, floor, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, rows, detail)


def _last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def _phase_command(phase: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "bench", "--phase", phase, *args]


def _history_env(root: Path, source: Path) -> dict[str, str]:
    """A fresh warehouse, clone cache and Dagster home (the project's dagster.yaml) for the real history."""
    home = root / "dagster-home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    return {
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(root / "warehouse"),
        "LIGER_CACHE_DIR": str(root / "cache"),
        "LIGER_SOURCE": str(source),
    }


def run(
    rows: int,
    seed: int,
    data_dir: Path,
    work: Path,
    source: Path | None,
    history: bool = True,
    statistics: bool = True,
    scales: list[int] | None = None,
) -> list[Phase]:
    # A warehouse left by an earlier run in the same --work-dir would make every phase a no-change run.
    for built in ("synthetic", "history", "scales"):
        shutil.rmtree(work / built, ignore_errors=True)
    csv = generated_csv(data_dir, rows, seed)
    warehouse = str(work / "synthetic" / "warehouse")
    phases = [
        measure(CSV_FLOOR, _phase_command("floor-csv", str(csv), str(work / "floor.parquet")), rows=rows),
        measure(NORMALIZE, _phase_command("normalize", str(csv), warehouse), floor=CSV_FLOOR, rows=rows),
    ]
    # Not a floor of the issue's, a second reference: reading the file and storing the tables alone.
    output = measure("normalize-output", _phase_command("normalize-output", str(csv), warehouse))
    phases += [
        Phase(READ_ALONE, CSV_FLOOR, output.detail["read_s"], output.detail["read_cpu_s"], output.peak_rss_mb, rows),
        Phase(STORE_ALONE, CSV_FLOOR, output.detail["store_s"], output.detail["store_cpu_s"], output.peak_rss_mb, rows, output.detail),
    ]
    if statistics:
        phases += _statistics_phases(warehouse, rows)
    for scale in sorted(set(scales or ())):
        if scale != rows:
            phases += _scale_phases(data_dir, scale, seed, work / "scales" / str(scale))
    if history and source is not None:
        phases += _history_phases(work / "history", source)
    return phases


def generated_csv(data_dir: Path, rows: int, seed: int) -> Path:
    """The synthetic CSV (bench.synthetic, cached under `data_dir`), made in a process of its own: a child's
    peak RSS starts from its parent's at fork, so a process grown by generating 10M rows would inflate every figure."""
    generated = measure("generate", _phase_command("generate", str(data_dir), str(rows), str(seed)))
    return Path(generated.detail["csv"])


def _statistics_phases(warehouse: str, rows: int) -> list[Phase]:
    stats = measure(BUILD, _phase_command("statistics", warehouse), rows=rows)
    floor = measure(STATS_FLOOR, _phase_command("statistics-floor", warehouse), rows=rows)
    output = measure(STATS_OUTPUT, _phase_command("statistics-output", warehouse), rows=rows)
    # Once the design not kept (every table copied in) beside three Parquet views; both copy every table now.
    copies = measure(BUILD_COPIES, _phase_command("statistics", warehouse, "copies"), rows=rows)
    queries = measure(QUERIES, _phase_command("queries", warehouse))
    queries_copies = measure(QUERIES_COPIES, _phase_command("queries", warehouse, "copies"))
    series_floor = measure(SERIES_FLOOR, _phase_command("series-floor", warehouse), rows=rows)
    series = sum(stats.detail["sql_parts_s"][name] for name in ("series_noise", "change_points"))
    return [
        stats,
        Phase(STATS_FLOOR, None, floor.detail["sql_s"], floor.cpu_s, floor.peak_rss_mb, rows),
        # Not a floor of the issue's, a second reference: how much of the SQL's time its output alone takes.
        Phase(STATS_OUTPUT, None, output.detail["sql_s"], output.cpu_s, output.peak_rss_mb, rows),
        Phase(STATS_SQL, STATS_FLOOR, stats.detail["sql_s"], 0.0, stats.peak_rss_mb, rows),
        copies,
        Phase(STATS_SQL_COPIES, STATS_FLOOR, copies.detail["sql_s"], 0.0, copies.peak_rss_mb, rows),
        queries,
        queries_copies,
        Phase(SERIES_FLOOR, None, series_floor.detail["floor_s"], series_floor.cpu_s, series_floor.peak_rss_mb, rows, series_floor.detail),
        Phase(SERIES, SERIES_FLOOR, series, 0.0, stats.peak_rss_mb, rows),
    ]


def _scale_phases(data_dir: Path, rows: int, seed: int, work: Path) -> list[Phase]:
    """The whole ingest (normalization, then the database build) at another size, for its cost per million rows."""
    csv = generated_csv(data_dir, rows, seed)
    warehouse = str(work / "warehouse")
    normalize = measure(f"{NORMALIZE} at {rows:,} rows", _phase_command("normalize", str(csv), warehouse), rows=rows)
    build = measure(f"{BUILD} at {rows:,} rows", _phase_command("statistics", warehouse), rows=rows)
    return [normalize, build]


def _history_phases(root: Path, source: Path) -> list[Phase]:
    env = _history_env(root, source)
    floor_env = {**env, "DAGSTER_HOME": str(Path(env["DAGSTER_HOME"]).with_name("dagster-floor-home"))}
    Path(floor_env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", Path(floor_env["DAGSTER_HOME"]) / "dagster.yaml")
    floor = _with_run_events(measure(DAGSTER_FLOOR, _phase_command("dagster-floor"), env=floor_env), floor_env)
    materialize = [sys.executable, "-m", "pipelines", "materialize"]
    first = _with_run_events(measure(MATERIALIZE, materialize, env=env, floor=floor.name), env)
    again = _with_run_events(measure(NOOP, materialize, env=env, floor=floor.name), env)
    first.rows = again.rows = _history_rows(Path(env["WAREHOUSE_DIR"]))
    return [floor, first, again, *_new_folder_phases(root / "new-folder", source)]


def _new_folder_phases(root: Path, source: Path) -> list[Phase]:
    """The history built with its newest CI folder held back (not a figure), then that folder added and materialized
    again: what one weekly push of upstream's CI costs, set against the clean build of the whole history."""
    upstream = new_folder.copy_source(source, root / "upstream")
    held = new_folder.newest_folder(upstream)
    if held is None:
        return []
    env = _history_env(root, upstream)
    materialize = [sys.executable, "-m", "pipelines", "materialize"]
    new_folder.move_branch(upstream, held.held)
    before = measure(HELD_BACK, materialize, env=env)
    new_folder.move_branch(upstream, held.head)
    added = _with_run_events(measure(NEW_FOLDER, materialize, env=env, floor=MATERIALIZE), env)
    added.detail["folder"] = held.folder
    added.rows = _history_rows(Path(env["WAREHOUSE_DIR"]))
    return [before, added]


def _with_run_events(phase: Phase, env: dict[str, str]) -> Phase:
    """`phase` with what its run wrote to the instance (read afterwards, in a process of its own, so not timed)."""
    phase.detail = {**(phase.detail or {}), **measure("run events", _phase_command("run-events"), env=env).detail}
    return phase


def _history_rows(warehouse: Path) -> int | None:
    import polars as pl

    snapshots = layout.Layout(warehouse).table("snapshots")
    return int(pl.read_parquet(snapshots)["row_count"].sum()) if snapshots.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the synthetic CSV (default 100000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=settings.PROJECT_ROOT / "data" / "bench",
        help="where synthetic CSVs are cached (default data/bench)",
    )
    parser.add_argument("--work-dir", type=Path, help="where warehouses are built (default: a temporary folder, removed)")
    parser.add_argument("--source", type=Path, default=DEFAULT_BUNDLE, help="the real history (default: the shared bundle)")
    parser.add_argument("--no-history", action="store_true", help="skip the real-history phases")
    parser.add_argument("--no-statistics", action="store_true", help="skip the statistics phases")
    parser.add_argument(
        "--scales",
        type=lambda text: [int(size) for size in text.split(",") if size],
        help="comma-separated sizes the whole ingest is also measured at (default 1000000,3000000, those below --rows)",
    )
    parser.add_argument("--json", action="store_true", help="also print one JSON object with the ratios and every phase")
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(PHASES[args.phase[0]](*args.phase[1:]), default=str))
        return 0
    source = args.source if args.source and args.source.exists() else None
    scales = args.scales if args.scales is not None else [size for size in DEFAULT_SCALES if size < args.rows]
    # Absolute: it is handed to phases as DAGSTER_HOME, which Dagster wants absolute.
    work = (args.work_dir or Path(tempfile.mkdtemp(prefix="liger-bench-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        phases = run(args.rows, args.seed, args.data_dir, work, source, not args.no_history, not args.no_statistics, scales)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{args.rows:,} synthetic rows (seed {args.seed}); real history: {source or 'not found, skipped'}")
    print(table(phases))
    summary = ratios(phases, args.rows)
    print("\n".join(target_lines(summary)))
    for line in (
        rss_growth_line(summary),
        stats_parts_line(summary),
        change_points_line(summary),
        dagster_runs_line(summary),
        new_folder_line(summary),
    ):
        if line:
            print(line)
    print("ratios: " + ", ".join(f"{k} {v}" for k, v in summary.items() if not isinstance(v, dict)))
    if args.json:
        print(json.dumps({**summary, "rows": args.rows, "phases": [asdict(p) for p in phases]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
