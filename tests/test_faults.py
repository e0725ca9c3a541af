"""Faults: a run killed at random points, a disk that fills mid-table, a corrupt or half-fetched
clone cache, an unreachable source, two writers and readers at once. After each, the previous
warehouse reads and passes its checks, and the next normal run repairs everything: its tables
equal those of a clean ingest."""

from __future__ import annotations

import errno
import importlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest
from conftest import FILE_GLOB, UpstreamRepo, git, liger_csv, liger_row
from robustness_tally import trial

from pipelines.assemble import checks
from pipelines.core import settings
from pipelines.duck import database_build, db
from pipelines.ingest.source import open_source
from pipelines.ingest.source_git import GitSource
from pipelines.ingest.source_types import SourceError
from pipelines.ingest.steps import TABLE_NAMES, SourceSettings, build_tables, stage_new, sync
from pipelines.storage import store

# Slow tier (faults injected into whole ingests, many of them in processes of their own): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow

pytest_plugins = ["robustness_report"]

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"
KILLS = int(os.environ.get("ROBUSTNESS_KILLS") or (21 if os.environ.get("CI") else 8))
SEED = int(os.environ.get("ROBUSTNESS_SEED") or time.time_ns() % 100_000)
DISK_FULL_POINTS = 8
BASELINES = settings.DEFAULT_BASELINES

# The ingest as the Dagster assets run it (each step under the writer lock), as a child process
# that imports first, says "ready", and starts only when told, so a kill lands in the work.
INGEST = """
import sys
from pathlib import Path
from pipelines.core import settings
from pipelines.duck import database_build, db
from pipelines.storage import store
from pipelines.ingest.steps import SourceSettings, build_tables, stage_new, sync

warehouse, source, cache = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
source_settings = SourceSettings(source, "main", "benchmark/data/all_benchmark_data*.csv", cache)
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
    build_tables(warehouse, list(listing.files_at_head))
phase("database")
with store.writer_lock(warehouse):
    database_build.build_database_if_changed(warehouse, settings.DEFAULT_BASELINES)
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
    source_settings = SourceSettings(source, "main", FILE_GLOB, cache)
    with store.writer_lock(warehouse):
        listing = sync(warehouse, source_settings)
        stage_new(warehouse, source_settings, listing)
        build_tables(warehouse, list(listing.files_at_head))
        database_build.build_database_if_changed(warehouse, BASELINES)


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


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> History:
    return History(tmp_path_factory.mktemp("faults-history"))


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


def timed_run(history: History, target: Path) -> float:
    """How long an uninterrupted child run of the new commits takes, from the go."""
    warehouse, cache = history.copy(target)
    process = start_ingest(warehouse, str(history.repo.path), cache)
    started = time.monotonic()
    process.stdin.write("go\n")
    process.stdin.flush()
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0 and out.split()[-1] == "done", err
    return time.monotonic() - started


def test_sigkill_at_random_points_leaves_the_previous_warehouse_and_the_next_run_repairs_it(history, tmp_path):
    duration = timed_run(history, tmp_path / "timed")
    history.assert_repaired(tmp_path / "timed" / "warehouse", tmp_path / "timed" / "cache")
    chance = random.Random(SEED)
    kills, attempts, phases = 0, 0, []
    while kills < KILLS:
        attempts += 1
        assert attempts < 4 * KILLS, f"only {kills} of {attempts} runs were killed before they ended (seed {SEED})"
        warehouse, cache = history.copy(tmp_path / "run")
        process = start_ingest(warehouse, str(history.repo.path), cache)
        process.stdin.write("go\n")
        process.stdin.flush()
        started = time.monotonic()
        time.sleep(chance.uniform(0, duration))
        process.send_signal(signal.SIGKILL)
        out, err = process.communicate(timeout=120)
        if process.returncode != -signal.SIGKILL:
            duration = min(duration, time.monotonic() - started)  # it finished first: aim earlier
            continue
        kills += 1
        phase = out.split()[-1]
        phases.append(phase)
        with trial("fault", f"SIGKILL at a random point ({phase})"):
            history.assert_previous_or_complete(warehouse)
            history.assert_repaired(warehouse, cache)
    print(f"{kills} kills (seed {SEED}) by phase: {dict(sorted((p, phases.count(p)) for p in set(phases)))}")


# ---------------------------------------------------------------- a full disk


def enospc(path: object) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


class FullDisk:
    """Counts Parquet writes (whole files, and batches appended to a file) and fails the
    `failing`-th with ENOSPC, after putting half a file where a whole file was to go."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, failing: int | None = None):
        self.calls, self.failing = 0, failing
        write_parquet = store.write_parquet

        def whole(frame, path, *args, **kwargs):
            self._count(Path(path))
            return write_parquet(frame, path, *args, **kwargs)

        monkeypatch.setattr(store, "write_parquet", whole)
        appender = getattr(store, "ParquetAppender", None)
        if appender is not None:
            append = appender.write

            def batch(writer, frame, *args, **kwargs):
                self._count(None)
                return append(writer, frame, *args, **kwargs)

            monkeypatch.setattr(appender, "write", batch)

    def _count(self, path: Path | None) -> None:
        self.calls += 1
        if self.calls == self.failing:
            if path is not None:
                path.write_bytes(b"PAR1 half a file")
            raise enospc(path)


def test_disk_full_in_the_middle_of_any_parquet_write(history, tmp_path):
    """A Parquet write of a run (a staged snapshot, or a table, batch by batch) fails with ENOSPC:
    the earlier warehouse stays as it was and the next run completes it."""
    with pytest.MonkeyPatch.context() as patch:
        counter = FullDisk(patch)
        ingest_now(*history.copy(tmp_path / "count"), source=str(history.repo.path))
    # Evenly spread over the run, first and last write included: staging, then every table.
    points = sorted({round(1 + k * (counter.calls - 1) / (DISK_FULL_POINTS - 1)) for k in range(DISK_FULL_POINTS)})
    for failing in points:
        warehouse, cache = history.copy(tmp_path / "run")
        with trial("fault", "disk full writing Parquet"):
            with pytest.MonkeyPatch.context() as patch, pytest.raises(OSError) as raised:
                FullDisk(patch, failing)
                ingest_now(warehouse, cache, source=str(history.repo.path))
            assert raised.value.errno == errno.ENOSPC
            assert same_tables(assert_valid(warehouse), history.before)
            history.assert_repaired(warehouse, cache)


@pytest.mark.parametrize(
    ("target", "where"),
    [
        ("pipelines.storage.store.write_bytes_atomic", store.JOURNAL),
        ("pipelines.storage.store.write_bytes_atomic", "_state.json"),
        ("pipelines.storage.store.write_bytes_atomic", "_source.json"),
        ("pipelines.duck.database_build._create_statistics", None),
    ],
    ids=["journal", "table state", "source listing", "database build"],
)
def test_disk_full_writing_the_journal_state_listing_or_database(history, tmp_path, monkeypatch, target, where):
    module, name = target.rsplit(".", 1)
    original = getattr(importlib.import_module(module), name)

    def failing(*args, **kwargs):
        path = args[0]
        if where is None or Path(path).name == where:
            if where is not None:
                store.temp_path(Path(path)).write_bytes(b"{half")
            raise enospc(path)
        return original(*args, **kwargs)

    warehouse, cache = history.copy(tmp_path / "run")
    with trial("fault", f"disk full writing {where or 'warehouse.duckdb'}"):
        monkeypatch.setattr(target, failing)
        with pytest.raises(OSError) as raised:
            ingest_now(warehouse, cache, str(history.repo.path))
        monkeypatch.setattr(target, original)
        assert raised.value.errno == errno.ENOSPC
        history.assert_previous_or_complete(warehouse)
        history.assert_repaired(warehouse, cache)


# ---------------------------------------------------------------- the clone cache


def clone_of(cache: Path) -> Path:
    [clone] = [p for p in cache.glob("git-*") if not p.name.endswith(".lock")]
    return clone


def damage_objects(clone: Path) -> None:
    for path in (clone / "objects").rglob("*"):
        if path.is_file() and path.parent.name != "info":
            path.unlink()


def truncate_packs(clone: Path) -> None:
    for pack in (clone / "objects" / "pack").glob("*.pack"):
        pack.chmod(0o644)
        data = pack.read_bytes()
        pack.write_bytes(data[: len(data) // 2])


def write(relative: str, text: str):
    def damage(clone: Path) -> None:
        path = clone / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.chmod(0o644)
        path.write_text(text)

    return damage


def replace_with_file(clone: Path) -> None:
    shutil.rmtree(clone)
    clone.write_text("not a repository")


def empty_folder(clone: Path) -> None:
    shutil.rmtree(clone)
    clone.mkdir()


def half_cloned(clone: Path) -> None:
    """A clone killed midway: its staging folder beside the cache, holding part of a repository."""
    staging = clone.with_name(f".clone-{clone.name}-killed")
    shutil.copytree(clone, staging)
    damage_objects(staging)


DAMAGES = {
    "objects deleted": damage_objects,
    "packs truncated (half-fetched)": truncate_packs,
    "HEAD garbage": write("HEAD", "garbage\n"),
    "branch ref to a missing commit": write("refs/heads/main", "1" * 40 + "\n"),
    "stale ref lock of a killed fetch": write("refs/heads/main.lock", ""),
    "stale packed-refs lock": write("packed-refs.lock", ""),
    "stale shallow lock": write("shallow.lock", ""),
    "half-written temporary pack": write("objects/pack/tmp_pack_killed", "PACK\x00\x00"),
    "config garbage": write("config", "[core\nbroken"),
    "packed-refs garbage": write("packed-refs", "not a ref line\n"),
    "clone replaced by a file": replace_with_file,
    "clone folder emptied": empty_folder,
    "clone staging left by a killed clone": half_cloned,
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_clone_cache_is_repaired_by_the_next_sync(history, tmp_path, damage):
    warehouse, cache = history.copy(tmp_path / "run")
    with trial("fault", f"clone cache: {damage}"):
        DAMAGES[damage](clone_of(cache))
        history.assert_repaired(warehouse, cache)
        listing = open_source(str(history.repo.path), cache, "main", FILE_GLOB).listing()
        assert listing.head == git(history.repo.path, "rev-parse", "HEAD")


def test_the_project_repository_is_never_touched_through_a_broken_clone(tmp_path):
    """A clone folder that is no repository, inside a git work tree (data/cache sits in the project's),
    must not make git act on the enclosing repository."""
    outer = UpstreamRepo(tmp_path / "project")
    outer.commit({"README.md": "project\n"}, "project")
    project_head = git(outer.path, "rev-parse", "HEAD")
    upstream = UpstreamRepo(tmp_path / "upstream")
    upstream.commit({DATA: liger_csv(liger_row())}, "data")
    with trial("fault", "clone cache: broken clone inside a git work tree"):
        source = GitSource(str(upstream.path), outer.path / "data" / "cache", "main", FILE_GLOB)
        source.clone_dir.mkdir(parents=True)
        (source.clone_dir / "HEAD").write_text("garbage\n")
        source.sync()
        assert git(outer.path, "rev-parse", "HEAD") == project_head
        assert git(outer.path, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
        assert source.listing().head == git(upstream.path, "rev-parse", "HEAD")


# ---------------------------------------------------------------- an unreachable source


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr("pipelines.ingest.source_retry.BACKOFF_SECONDS", 0.01)
    # No network: an https source fails at once instead of waiting on DNS.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "http.proxy")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "http://127.0.0.1:9")


def closed_port_url(path: str) -> str:
    return f"http://127.0.0.1:9/{path}"


@pytest.mark.parametrize(
    "make_source",
    [
        pytest.param(lambda moved: str(moved), id="local clone moved away"),
        pytest.param(lambda moved: f"file://{moved}", id="file URL of nothing"),
        pytest.param(lambda moved: closed_port_url("liger.git"), id="git over http, connection refused"),
        pytest.param(lambda moved: closed_port_url("all_benchmark_data.csv"), id="CSV URL, connection refused"),
    ],
)
def test_an_unreachable_source_is_one_clear_line_and_leaves_the_warehouse(history, tmp_path, fast_retries, make_source):
    warehouse, cache = history.copy(tmp_path / "run")
    moved = tmp_path / "moved-away"
    shutil.move(history.repo.path, moved)
    try:
        with trial("fault", "source unreachable"):
            source = make_source(history.repo.path)
            # Another source than the warehouse's is refused before it is asked: try it on a new warehouse.
            same_source = not source.startswith("http")
            with pytest.raises(SourceError) as raised:
                ingest_now(warehouse if same_source else tmp_path / "new", cache, source)
            message = str(raised.value)
            assert "\n" not in message and "LIGER_SOURCE" in message and source in message
            assert message.startswith("cannot read the Liger benchmark source"), message
            assert same_tables(assert_valid(warehouse), history.before)
    finally:
        shutil.move(moved, history.repo.path)
    history.assert_repaired(warehouse, cache)


# ---------------------------------------------------------------- two writers and readers at once


def test_two_materializations_and_readers_at_once_corrupt_nothing(history, tmp_path):
    warehouse, cache = history.copy(tmp_path / "run")
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = {"parquet": 0, "duckdb": 0}

    def read_parquet() -> None:
        # Through one open handle: polars and pyarrow given a path open the file twice (footer, then
        # data), and a commit that replaces the file in between fails the read, though both files are whole.
        while not stop.is_set():
            try:
                for name in TABLE_NAMES:
                    with open(warehouse / f"{name}.parquet", "rb") as handle:
                        pl.read_parquet(handle)
                tables = ", ".join(f"(SELECT count(*) FROM read_parquet('{warehouse}/{name}.parquet'))" for name in TABLE_NAMES)
                with duckdb.connect() as con:
                    con.sql(f"SELECT {tables}").fetchall()
                reads["parquet"] += 1
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    def query_duckdb() -> None:
        while not stop.is_set():
            try:
                [(runs,)] = db.query(warehouse, "SELECT count(*) FROM runs").rows
                assert runs in (history.before_runs, history.after["runs"].height)
                assert all(outcome.passed for outcome in db.run_checks(warehouse))
                reads["duckdb"] += 1
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    with trial("fault", "two materializations and two readers at once"):
        readers = [threading.Thread(target=read_parquet), threading.Thread(target=query_duckdb)]
        for reader in readers:
            reader.start()
        # The ingest step by step, and the whole Dagster job (exports and report too), at once.
        ingest = start_ingest(warehouse, str(history.repo.path), cache)
        ingest.stdin.write("go\n")
        ingest.stdin.flush()
        writers = [ingest, start_materialize(warehouse, str(history.repo.path), cache, tmp_path / "home")]
        outcomes = [writer.communicate(timeout=600) for writer in writers]
        stop.set()
        for reader in readers:
            reader.join()
        assert [w.returncode for w in writers] == [0, 0], [err[-2000:] for _, err in outcomes]
        assert not errors, errors[:3]
        assert reads["parquet"] and reads["duckdb"]
        assert same_tables(assert_valid(warehouse), history.after)
        assert not leftovers(warehouse, cache)


DAGSTER_KILLS = int(os.environ.get("ROBUSTNESS_DAGSTER_KILLS") or 2)


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


def test_sigkill_of_python_m_pipelines_materialize_at_random_points(history, tmp_path):
    """The whole Dagster job (every asset, exports and report included), killed at random times."""
    warehouse, cache = history.copy(tmp_path / "timed")
    started = time.monotonic()
    process = start_materialize(warehouse, str(history.repo.path), cache, tmp_path / "timed" / "home")
    assert process.wait(timeout=600) == 0, process.stderr.read()[-2000:]
    duration = time.monotonic() - started
    chance = random.Random(SEED + 1)
    kills = attempts = 0
    while kills < DAGSTER_KILLS:
        attempts += 1
        assert attempts < 4 * DAGSTER_KILLS, f"only {kills} of {attempts} runs were killed before they ended (seed {SEED})"
        warehouse, cache = history.copy(tmp_path / "run")
        started = time.monotonic()
        process = start_materialize(warehouse, str(history.repo.path), cache, tmp_path / "run" / "home")
        # Not before 30%: the first seconds go to importing Dagster, before any write.
        time.sleep(chance.uniform(0.3 * duration, duration))
        process.send_signal(signal.SIGKILL)
        if process.wait(timeout=120) != -signal.SIGKILL:
            duration = min(duration, time.monotonic() - started)  # it finished first: aim earlier
            continue
        kills += 1
        with trial("fault", "SIGKILL of python -m pipelines materialize"):
            history.assert_previous_or_complete(warehouse)
            history.assert_repaired(warehouse, cache)
