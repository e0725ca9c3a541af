"""Thirty simulated days of unattended ingest against a local upstream that gains commits, with random SIGKILLs,
a full disk once, a damaged warehouse once and a sensor tick every day. At the end the warehouse equals a fresh
one-shot build, no run is left in progress and nothing waits in the queue. It prints what it tried and survived.

The seed is fixed so that a failure can be replayed; `SOAK_SEED=N` tries another sequence.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import build_warehouse, liger_csv, liger_row
from polars.testing import assert_frame_equal
from test_operations import tick, warehouse_resource
from test_webserver import instance_home

from pipelines.__main__ import main
from pipelines.assemble import checks
from pipelines.assemble.tables_build import TABLE_NAMES
from pipelines.core import settings
from pipelines.statistics import database_build, db

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"
DAYS = 30
KILLS = 6
SEED = int(os.environ.get("SOAK_SEED", "20261203"))
FULL_DISK_BYTES = 4096
IN_PROGRESS = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


class Upstream:
    """Upstream's benchmark files as they grow: each day adds runs, re-runs overwrite a key, now and then a new file."""

    def __init__(self, repo, rng: random.Random):
        self.repo = repo
        self.rng = rng
        self.files: dict[str, dict[tuple, str]] = {DATA: {}}

    def publish(self, day: int) -> str:
        stamp = f"2025-03-{day:02d} 0{day % 10}:00:00"
        if day % 7 == 0:
            self.repo.commit({"README.md": f"day {day}\n"}, f"day {day}: docs only", date=f"2025-03-{day:02d}T12:00:00+00:00")
            return "a commit that changes no data file"
        if day == 10:
            self.files[CUTILE] = {}
        target = self.rng.choice(sorted(self.files))
        rows = self.files[target]
        provider = self.rng.choice(["liger", "huggingface", "torch"])
        x = str(self.rng.choice([512, 1024, 2048, 4096]))
        key = (provider, x)
        what = "re-ran a benchmark (its row overwritten)" if key in rows else "added a benchmark"
        median = round(self.rng.uniform(0.2, 2.0), 3)
        rows[key] = liger_row(provider=provider, x_value=x, y50=str(median), y20=str(median * 0.9), y80=str(median * 1.1), timestamp=stamp)
        self.repo.commit(
            {name: liger_csv(*[rows[k] for k in sorted(rows)]) for name, rows in self.files.items() if rows},
            f"day {day}",
            date=f"2025-03-{day:02d}T12:00:00+00:00",
        )
        return f"{what} in {Path(target).name}"


# `python -m pipelines materialize` on a disk that is full: every write past FULL_DISK_BYTES into any file fails.
ON_A_FULL_DISK = f"""
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({FULL_DISK_BYTES}, {FULL_DISK_BYTES}))
sys.argv = ["pipelines", "materialize"]
runpy.run_module("pipelines", run_name="__main__")
"""


def materialize(env: dict[str, str], full_disk: bool = False) -> subprocess.Popen:
    command = ["-c", ON_A_FULL_DISK] if full_disk else ["-m", "pipelines", "materialize"]
    return subprocess.Popen(
        [sys.executable, *command], env=env, cwd=settings.PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def last_good_is_readable(warehouse: Path, settled: bool) -> str:
    """The warehouse a reader sees: tables that pass the blocking checks and a database that answers, built from
    those tables when the day's run finished (a run killed between the two leaves the database one commit behind)."""
    if not (warehouse / "runs.parquet").exists():
        return "no warehouse yet"
    runs = pl.read_parquet(warehouse / "runs.parquet").height
    for check in (checks.run_ids_unique, checks.references_exist, checks.quantiles_ordered, checks.snapshot_accounting):
        outcome = check(warehouse)
        assert outcome.passed, outcome.description
    if db.database_path(warehouse).exists():
        [(in_database,)] = db.query(warehouse, "SELECT count(*) FROM runs").rows
        assert in_database == runs or not settled, (in_database, runs)
    return f"{runs} runs readable"


def damage(warehouse: Path) -> str:
    runs = warehouse / "runs.parquet"
    runs.write_bytes(runs.read_bytes()[: runs.stat().st_size // 2])
    db.database_path(warehouse).write_bytes(b"not a database\x00\xff" * 64)
    return "runs.parquet truncated and warehouse.duckdb overwritten with garbage"


@pytest.mark.slow
def test_thirty_days_of_unattended_ingest(upstream_repo, tmp_path, monkeypatch):
    rng = random.Random(SEED)
    upstream = Upstream(upstream_repo, rng)
    home = instance_home(tmp_path)
    warehouse, cache = tmp_path / "warehouse", tmp_path / "cache"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(warehouse),
        "LIGER_SOURCE": str(upstream_repo.path),
        "LIGER_CACHE_DIR": str(cache),
    }
    for name in ("DAGSTER_HOME", "WAREHOUSE_DIR", "LIGER_SOURCE", "LIGER_CACHE_DIR"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(tmp_path)
    sensor_warehouse = warehouse_resource(warehouse, str(upstream_repo.path), cache)
    days = list(range(2, DAYS))
    rng.shuffle(days)
    kill_days, full_disk_day, damage_day = set(days[:KILLS]), days[KILLS], days[KILLS + 1]
    cursor: str | None = None
    journal = [f"seed {SEED}"]

    for day in range(1, DAYS + 1):
        published = upstream.publish(day)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            result = tick(sensor_warehouse, cursor, instance)
        cursor = result.cursor
        asked = f"sensor asked for {len(result.run_requests or [])} run(s)"
        if day in kill_days:
            process = materialize(env)
            after = rng.uniform(2.0, 9.0)
            time.sleep(after)
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=60)
                happened = f"SIGKILL after {after:.1f} s"
            else:
                assert process.returncode == 0, process.stderr.read()[-2000:]
                happened = f"finished before the SIGKILL at {after:.1f} s"
        elif day == full_disk_day:
            process = materialize(env, full_disk=True)
            _, stderr = process.communicate(timeout=600)
            assert process.returncode != 0, "a run on a full disk cannot succeed"
            # It ends with one line that says what failed, whichever write hit the full disk first.
            assert stderr.strip().splitlines()[-1].startswith(("error: ", "failed: ")), stderr[-3000:]
            happened = f"full disk: the run failed (exit {process.returncode})"
        else:
            damaged = damage(warehouse) + "; " if day == damage_day else ""
            # In this process, which spares a Python start per day; the kills and the full disk need their own.
            assert main(["materialize"]) == 0, f"day {day}: {damaged}the run failed"
            happened = f"{damaged}materialized"
        readable = last_good_is_readable(warehouse, settled=happened.endswith("materialized"))
        journal.append(f"day {day:2d}: upstream {published}; {asked}; {happened}; {readable}")

    final = materialize(env)
    _, stderr = final.communicate(timeout=600)
    assert final.returncode == 0, stderr[-3000:]
    journal.append(f"after the last day: materialized; {last_good_is_readable(warehouse, settled=True)}")

    fresh = build_warehouse(tmp_path / "fresh", str(upstream_repo.path), tmp_path / "fresh-cache")
    database_build.build_database(fresh, settings.DEFAULT_BASELINES)
    for name in TABLE_NAMES:
        assert_frame_equal(pl.read_parquet(warehouse / f"{name}.parquet"), pl.read_parquet(fresh / f"{name}.parquet"), check_exact=True)
    for name in db.STATISTICS:
        query = f"SELECT * FROM {name} ORDER BY ALL"
        assert db.query(warehouse, query).rows == db.query(fresh, query).rows, name

    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = list(instance.get_run_records())
    left = [r.dagster_run.run_id for r in records if r.dagster_run.status in IN_PROGRESS]
    assert not left, f"runs left in progress or queued: {left}"
    statuses = [r.dagster_run.status.value for r in records]
    journal.append(
        f"instance: {len(records)} runs, {statuses.count('SUCCESS')} succeeded, {statuses.count('FAILURE')} failed, none in progress"
    )
    print("\n".join(journal))
