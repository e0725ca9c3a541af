"""What the fault tests share: an upstream repository with a history of commits, a warehouse of its
first commits kept as a template (`History`), the ingest as the Dagster assets run it (in this
process, or as a child process to kill), the whole `python -m pipelines materialize` as a child,
and the checks that a warehouse reads, is the earlier one or the complete new one, and was repaired.

Test modules build a `History` once per module in a fixture of their own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import psutil
from conftest import FILE_GLOB, UpstreamRepo, liger_csv, liger_row

from pipelines.assemble import checks
from pipelines.assemble.tables_build import TABLE_NAMES, build_tables
from pipelines.core import settings
from pipelines.core.settings import for_source
from pipelines.ingest.steps import stage_new, sync
from pipelines.statistics import database_publish as publish
from pipelines.statistics import db
from pipelines.storage import store

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"
BASELINES = settings.DEFAULT_BASELINES

# The ingest as the Dagster assets run it (each step under the writer lock), as a child process
# that imports first, says "ready", and starts only when told, so a kill lands in the work.
INGEST = """
import sys
from pathlib import Path
from pipelines.core import settings
from pipelines.statistics import database_build, db
from pipelines.statistics import database_publish as publish
from pipelines.storage import store
from pipelines.assemble.tables_build import build_tables
from pipelines.core.settings import for_source
from pipelines.ingest.steps import stage_new, sync

warehouse, source, cache = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
source_settings = for_source(source, "main", "benchmark/data/all_benchmark_data*.csv", cache)
def phase(name):
    print(name, flush=True)
phase("ready")
sys.stdin.readline()
phase("sync")
with store.writer_lock(warehouse):
    listing = sync(warehouse, source_settings)
phase("stage")
with store.writer_lock(warehouse):
    stage_new(warehouse, source_settings, listing)
phase("tables")
with store.writer_lock(warehouse):
    build_tables(warehouse, listing)
phase("database")
with store.writer_lock(warehouse):
    publish.build_database_if_changed(warehouse, settings.DEFAULT_BASELINES)
phase("done")
"""


def history_rows(commit: int, file_seed: int) -> list[str]:
    """Rows of one version of a data file: earlier runs kept, some re-run, new ones added."""
    rows = []
    for k in range(20 + 15 * commit):
        rerun = commit if k % 7 == 0 else k // 15
        rows.append(
            liger_row(
                provider=("liger", "huggingface", "torch")[k % 3],
                x_value=str(256 * (k // 3 + 1)),
                y50=f"{0.5 + 0.01 * ((k + file_seed) % 9):.3f}",
                y20="0.3",
                y80="0.9",
                timestamp=f"2025-0{1 + rerun % 9}-0{1 + file_seed} 10:00:00",
                gpu=("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")[file_seed % 2],
            )
        )
    return rows


def add_commits(repo: UpstreamRepo, first: int, last: int) -> None:
    for commit in range(first, last):
        files = {DATA: liger_csv(*history_rows(commit, 0))}
        if commit % 2:
            files[CUTILE] = liger_csv(*history_rows(commit, 1))
        repo.commit(files, f"benchmarks {commit}", date=f"2025-03-{1 + commit:02d}T00:00:00+00:00")


def ingest_now(warehouse: Path, cache: Path, source: str) -> None:
    """One normal run, in this process, step by step as the assets run it."""
    source_settings = for_source(source, "main", FILE_GLOB, cache)
    with store.writer_lock(warehouse):
        listing = sync(warehouse, source_settings)
        stage_new(warehouse, source_settings, listing)
        build_tables(warehouse, listing)
        publish.build_database_if_changed(warehouse, BASELINES)


def read_tables(warehouse: Path) -> dict[str, pl.DataFrame]:
    return {name: pl.read_parquet(warehouse / f"{name}.parquet") for name in TABLE_NAMES}


def same_tables(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> bool:
    return all(a[name].equals(b[name]) for name in TABLE_NAMES)


def assert_valid(warehouse: Path) -> dict[str, pl.DataFrame]:
    """The tables read and pass the blocking contract checks; warehouse.duckdb opens and passes its own."""
    tables = read_tables(warehouse)
    for check in (checks.run_ids_unique, checks.references_exist, checks.quantiles_ordered, checks.snapshot_accounting):
        outcome = check(warehouse)
        assert outcome.passed, outcome.description
    if db.database_path(warehouse).exists():
        assert all(outcome.passed for outcome in db.run_checks(warehouse))
    return tables


def leftovers(*folders: Path) -> list[Path]:
    """Temporary files and folders a killed or failed run left behind."""
    return [p for folder in folders for p in folder.rglob("*") if store.TMP_MARK in p.name or p.name.startswith(".clone-")]


class History:
    """An upstream repository; a warehouse (and clone cache) of its first commits, kept as a template;
    then more commits, and the tables of a clean ingest of the whole history."""

    def __init__(self, root: Path, first: int = 3, total: int = 6):
        self.root = root
        self.repo = UpstreamRepo(root / "upstream")
        add_commits(self.repo, 0, first)
        self.template = root / "template"
        ingest_now(self.template / "warehouse", self.template / "cache", str(self.repo.path))
        self.before = assert_valid(self.template / "warehouse")
        self.before_runs = self.before["runs"].height
        add_commits(self.repo, first, total)
        clean = root / "clean"
        ingest_now(clean / "warehouse", clean / "cache", str(self.repo.path))
        self.after = assert_valid(clean / "warehouse")

    def copy(self, target: Path) -> tuple[Path, Path]:
        """A fresh copy of the earlier warehouse and its cache: (warehouse, cache)."""
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(self.template, target, symlinks=True)
        return target / "warehouse", target / "cache"

    def assert_previous_or_complete(self, warehouse: Path) -> None:
        """What a reader sees now (after the journal roll-forward the next writer starts with) is the
        earlier warehouse or the complete new one, never a mix, and it passes its checks."""
        with store.writer_lock(warehouse):
            pass
        tables = assert_valid(warehouse)
        assert same_tables(tables, self.before) or same_tables(tables, self.after), "the tables mix two runs"
        if db.database_path(warehouse).exists():
            [(runs,)] = db.query(warehouse, "SELECT count(*) FROM runs").rows
            assert runs in (self.before_runs, self.after["runs"].height)

    def assert_repaired(self, warehouse: Path, cache: Path) -> None:
        ingest_now(warehouse, cache, str(self.repo.path))
        assert same_tables(assert_valid(warehouse), self.after), "the next run did not repair the warehouse"
        assert db.query(warehouse, "SELECT count(*) FROM runs").rows == [(self.after["runs"].height,)]
        assert not leftovers(warehouse, cache), leftovers(warehouse, cache)


def start_ingest(warehouse: Path, source: str, cache: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", INGEST, str(warehouse), source, str(cache)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=settings.PROJECT_ROOT,
    )
    assert process.stdout.readline().strip() == "ready", process.stderr.read()
    return process


# Two staging workers, started as soon as a run has sampled its pace (pipelines/ingest/stage_pool.py).
ON_TWO_WORKERS = {"LIGER_STAGING_WORKERS": "2", "LIGER_STAGING_PARALLEL_AFTER_S": "0"}


def commit_history_for_workers(repo: UpstreamRepo) -> None:
    """Ten snapshots of 20,000 rows: a run samples its pace on the first five and hands the rest (four at least) to its
    workers, which are still staging a second after they start."""
    for commit in range(10):
        rows = [liger_row(x_value=str(k), timestamp=f"2025-01-{commit + 1:02d} 10:00:00", y50=f"0.{commit + 1}") for k in range(20_000)]
        repo.commit({"benchmark/data/all_benchmark_data.csv": liger_csv(*rows)}, f"commit {commit}")


def start_materialize(warehouse: Path, source: str, cache: Path, home: Path) -> subprocess.Popen:
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "WAREHOUSE_DIR": str(warehouse), "LIGER_SOURCE": source, "LIGER_CACHE_DIR": str(cache)}
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines", "materialize"],
        env=env,
        cwd=settings.PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def survivors(warehouse: Path, within_s: float = 5.0) -> list[str]:
    """The processes still alive `within_s` seconds on whose environment names `warehouse` (every process a
    `python -m pipelines` run starts inherits WAREHOUSE_DIR): what a killed run left behind."""
    deadline = time.monotonic() + within_s
    while True:
        found = []
        for process in psutil.process_iter(["pid", "status"]):
            if process.pid == os.getpid() or process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            try:
                if process.environ().get("WAREHOUSE_DIR") == str(warehouse):
                    found.append(f"{process.pid}: {' '.join(process.cmdline())[:200]}")
            except psutil.Error:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)
