"""A materialization killed with SIGKILL mid-write leaves the previous warehouse readable and valid."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import build_warehouse, liger_csv, liger_row
from fault_harness import survivors

from pipelines.assemble import checks
from pipelines.assemble.tables_build import TABLE_NAMES
from pipelines.core import layout, settings
from pipelines.statistics import database_build, db
from pipelines.storage import store

# Slow tier (materializations killed mid-write, each a process of its own): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow


DATA = "benchmark/data/all_benchmark_data.csv"
WAIT_SECONDS = 300

# Runs `python -m pipelines materialize`, but parks the process just before it renames the
# file named in argv[1] into place (the first `current` link is the tables' publication), after writing
# argv[2]; the test then kills it.
PAUSING_MATERIALIZE = """
import os, sys, time
from pathlib import Path
target, marker = sys.argv[1], Path(sys.argv[2])
rename = os.replace
def parked(src, dst, *args, **kwargs):
    if Path(dst).name == target:
        marker.write_text(str(src))
        time.sleep(3600)
    return rename(src, dst, *args, **kwargs)
os.replace = parked
from pipelines.__main__ import main

sys.exit(main(["materialize"]))
"""


def fingerprints(warehouse: Path) -> dict[str, str]:
    files = [f"{name}.parquet" for name in TABLE_NAMES] + [db.database_path(warehouse).name]
    return {name: hashlib.sha256((warehouse / name).read_bytes()).hexdigest() for name in files}


def assert_tables_valid(warehouse: Path, runs: int) -> None:
    """The Parquet tables read and pass the blocking contract checks."""
    assert pl.read_parquet(warehouse / "runs.parquet").height == runs
    for check in (checks.run_ids_unique, checks.references_exist, checks.quantiles_ordered, checks.snapshot_accounting):
        outcome = check(warehouse)
        assert outcome.passed, outcome.description


def assert_database_valid(warehouse: Path, runs: int) -> None:
    """warehouse.duckdb opens, holds `runs` runs and passes its checks."""
    assert db.query(warehouse, "SELECT count(*) FROM runs").rows == [(runs,)]
    assert all(outcome.passed for outcome in db.run_checks(warehouse))


def start_parked(target: str, warehouse: Path, source: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    home = tmp_path / "dagster-home"
    if not (home / "dagster.yaml").exists():
        home.mkdir()
        shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    marker = tmp_path / "parked"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(warehouse),
        "LIGER_SOURCE": str(source),
        "LIGER_CACHE_DIR": str(tmp_path / "cache"),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", PAUSING_MATERIALIZE, target, str(marker)],
        env=env,
        cwd=settings.PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return process, marker


def wait_for(marker: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not marker.exists():
        if process.poll() is not None:
            pytest.fail(f"the materialization ended (rc {process.returncode}) before writing: {process.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"the materialization did not reach the write within {WAIT_SECONDS}s")
        time.sleep(0.2)


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(layout.CURRENT, id="tables-built-not-published"),
        pytest.param("warehouse.duckdb", id="database-built-not-swapped"),
    ],
)
def test_sigkill_mid_write_leaves_the_previous_warehouse(upstream_repo, tmp_path, target):
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1"))}, "one")
    warehouse = tmp_path / "warehouse"
    build_warehouse(warehouse, str(upstream_repo.path), tmp_path / "cache")
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    before = fingerprints(warehouse)

    more = [liger_row(x_value=str(1024 * k), timestamp="2025-02-01 00:00:00") for k in range(2, 40)]
    upstream_repo.commit({DATA: liger_csv(liger_row(), *more)}, "two")
    process, marker = start_parked(target, warehouse, upstream_repo.path, tmp_path)
    try:
        wait_for(marker, process)
        half_written = Path(marker.read_text())
        assert half_written.exists(), "the run was not killed mid-write"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert survivors(warehouse) == [], "a process of the killed run is still alive"

    after = fingerprints(warehouse)
    if target == "warehouse.duckdb":
        # The tables were committed before the database build began; the database is the old one.
        assert after["warehouse.duckdb"] == before["warehouse.duckdb"]
        assert_tables_valid(warehouse, runs=40)
    else:
        assert after == before
        assert_tables_valid(warehouse, runs=2)
    assert_database_valid(warehouse, runs=2)

    # The next writer sweeps what the killed run left and lands the new data.
    build_warehouse(warehouse, str(upstream_repo.path), tmp_path / "cache")
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    assert not list(warehouse.glob(f".*{store.TMP_MARK}*"))
    assert_tables_valid(warehouse, runs=40)
    assert_database_valid(warehouse, runs=40)


def test_the_next_writer_sweeps_a_killed_build_of_any_stage(tmp_path):
    """What a build killed midway left (its folder under a temporary name) goes with the next writer, whatever
    stages that writer builds."""
    warehouse = tmp_path / "warehouse"
    half_made = [warehouse / layout.BUILDS / stage / f".{'0' * 24}{store.TMP_MARK}-killed" for stage in ("report", "bmf_exports")]
    for folder in half_made:
        (folder / "files").mkdir(parents=True)
    kept = warehouse / layout.BUILDS / "report" / ("1" * 24)
    kept.mkdir()
    with store.writer_lock(warehouse):
        assert [folder for folder in half_made if folder.exists()] == []
    assert kept.is_dir(), "a build that is not temporary stays"
