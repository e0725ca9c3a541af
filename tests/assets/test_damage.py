"""Damage: a warehouse file truncated, overwritten or emptied between two runs (a disk error, a bad copy,
a person's mistake). What can be rebuilt from the source or the staging is rebuilt by the next run, with no
one doing anything: the warehouse then equals the undamaged one and passes its checks. What cannot be
rebuilt fails the run with one line naming the file and what to do, never with raw bytes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import FILE_GLOB, UpstreamRepo, damaged_inside, liger_csv, liger_row

from pipelines.assemble import assembly as tables
from pipelines.assemble import checks
from pipelines.assemble.tables_build import TABLE_NAMES, build_tables
from pipelines.core import layout, settings
from pipelines.core.settings import for_source
from pipelines.ingest import staging
from pipelines.ingest.source.upstream_changes import check_upstream
from pipelines.ingest.steps import recorded_listing, stage_new, sync
from pipelines.statistics import database_publish as publish
from pipelines.statistics import db
from pipelines.storage import store

# Slow tier (every kind of damage to every file, each followed by the next run): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"
BASELINES = settings.DEFAULT_BASELINES


def rows(commit: int, gpu: str) -> list[str]:
    return [
        liger_row(
            provider=("liger", "huggingface", "torch")[k % 3],
            x_value=str(256 * (k // 3 + 1)),
            gpu=gpu,
            y50=f"{0.5 + 0.01 * k:.3f}",
            y80="0.9",
            timestamp=f"2025-0{1 + min(commit, k // 6)}-01 10:00:00",
        )
        for k in range(6 + 6 * commit)
    ] + ["rms_norm,liger,forward,speed,ms,H,hidden size,1024,not a number"]


def run_next(warehouse: Path, cache: Path, source: str) -> None:
    """The next run's ingest steps, each as its Dagster asset calls it (under the writer lock, the listing
    read back from `_source.json` between the steps)."""
    source_settings = for_source(source, "main", FILE_GLOB, cache)
    with store.writer_lock(warehouse):
        sync(warehouse, source_settings)
    with store.writer_lock(warehouse):
        stage_new(warehouse, source_settings, recorded_listing(warehouse))
    with store.writer_lock(warehouse):
        build_tables(warehouse, recorded_listing(warehouse))
    with store.writer_lock(warehouse):
        publish.build_database_if_changed(warehouse, BASELINES)


def read_tables(warehouse: Path) -> dict[str, pl.DataFrame]:
    return {name: pl.read_parquet(warehouse / f"{name}.parquet") for name in TABLE_NAMES}


def statistics(warehouse: Path) -> dict[str, list[tuple]]:
    with db.session(warehouse) as reader:
        return {name: sorted(map(repr, reader.query(f'SELECT * FROM "{name}"').rows)) for name in db.STATISTICS}


class Clean:
    """An upstream of three commits (two files) and its warehouse, ingested once, undamaged."""

    def __init__(self, root: Path):
        self.repo = UpstreamRepo(root / "upstream")
        for commit in range(3):
            files = {DATA: liger_csv(*rows(commit, "NVIDIA A100-SXM4-80GB"))}
            if commit:
                files[CUTILE] = liger_csv(*rows(commit, "NVIDIA H100 80GB HBM3"))
            self.repo.commit(files, f"benchmarks {commit}", date=f"2025-03-0{1 + commit}T00:00:00+00:00")
        self.root = root / "clean"
        run_next(self.warehouse, self.cache, self.source)
        self.tables = read_tables(self.warehouse)
        self.statistics = statistics(self.warehouse)

    @property
    def source(self) -> str:
        return str(self.repo.path)

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def copy(self, target: Path) -> tuple[Path, Path]:
        """A copy, settled by one run (the statistics' fingerprint holds the files' paths), so that the
        next run would change nothing but for the damage."""
        shutil.copytree(self.root, target, symlinks=True)
        warehouse, cache = target / "warehouse", target / "cache"
        run_next(warehouse, cache, self.source)
        return warehouse, cache

    def assert_equal(self, warehouse: Path) -> None:
        """The same tables and statistics as the undamaged warehouse, and every check passes."""
        found = read_tables(warehouse)
        for name in TABLE_NAMES:
            assert found[name].equals(self.tables[name]), f"{name} differs from the undamaged warehouse"
        for check in (checks.run_ids_unique, checks.references_exist, checks.quantiles_ordered, checks.snapshot_accounting):
            outcome = check(warehouse)
            assert outcome.passed, outcome.description
        assert all(outcome.passed for outcome in db.run_checks(warehouse))
        assert statistics(warehouse) == self.statistics


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Clean:
    return Clean(tmp_path_factory.mktemp("damage"))


def truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def garbage(path: Path) -> None:
    path.write_bytes(os.urandom(max(64, path.stat().st_size)))


def emptied(path: Path) -> None:
    path.write_bytes(b"")


DAMAGES = {"truncated": truncated, "garbage": garbage, "empty": emptied}


def staged_folder(warehouse: Path, file: str = DATA) -> Path:
    """The staging folder of the newest snapshot of `file`."""
    metas = [json.loads(meta.read_text()) for meta in layout.Layout(warehouse).staging.glob(f"*/{layout.META}")]
    newest = max((m for m in metas if m["source_file"] == file), key=lambda m: m["sequence"])
    return layout.Layout(warehouse).staged(newest["snapshot_id"])


def assert_staging_intact(warehouse: Path, listed: int) -> None:
    """Every staged snapshot reads whole: the damaged one was staged again, not kept."""
    folders = [f for f in layout.Layout(warehouse).staging.iterdir() if not f.name.startswith(".")]
    assert len(folders) == listed
    for folder in folders:
        meta = staging.SnapshotMeta(**json.loads((folder / layout.META).read_text()))
        assert sum(pl.read_parquet(p).height for p in folder.glob("rows-*.parquet")) == meta.accepted
        assert sum(pl.read_parquet(p).height for p in folder.glob("quarantine-*.parquet")) == meta.quarantined


def assert_one_clear_line(message: str, *names: str) -> None:
    assert "\n" not in message.strip(), message
    assert message.isprintable(), f"raw bytes in the message: {message!r}"
    for name in names:
        assert name in message, f"{name} not named in: {message}"


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
@pytest.mark.parametrize("table", TABLE_NAMES)
def test_a_damaged_table_file_is_rebuilt_from_the_staging(clean, tmp_path, table, damage):
    warehouse, cache = clean.copy(tmp_path / "w")
    DAMAGES[damage](warehouse / f"{table}.parquet")
    run_next(warehouse, cache, clean.source)
    clean.assert_equal(warehouse)


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_database_is_rebuilt(clean, tmp_path, damage):
    warehouse, cache = clean.copy(tmp_path / "w")
    DAMAGES[damage](db.database_path(warehouse))
    run_next(warehouse, cache, clean.source)
    clean.assert_equal(warehouse)


STAGED_DAMAGES = {
    "rows part truncated": lambda folder: truncated(folder / "rows-00000.parquet"),
    "rows part garbage": lambda folder: garbage(folder / "rows-00000.parquet"),
    "rows part missing": lambda folder: (folder / "rows-00000.parquet").unlink(),
    "quarantine part truncated": lambda folder: truncated(folder / "quarantine-00000.parquet"),
    "quarantine part empty": lambda folder: emptied(folder / "quarantine-00000.parquet"),
    "meta not JSON": lambda folder: garbage(folder / layout.META),
    "meta truncated": lambda folder: truncated(folder / layout.META),
    "meta wrong fields": lambda folder: (folder / layout.META).write_text(json.dumps({"snapshot_id": 1, "normalizer_version": 3})),
    "meta a list": lambda folder: (folder / layout.META).write_text("[3]"),
    "meta missing": lambda folder: (folder / layout.META).unlink(),
}


@pytest.mark.parametrize("damage", STAGED_DAMAGES)
def test_a_damaged_staged_snapshot_is_staged_again_from_the_source(clean, tmp_path, damage):
    warehouse, cache = clean.copy(tmp_path / "w")
    STAGED_DAMAGES[damage](staged_folder(warehouse))
    run_next(warehouse, cache, clean.source)
    assert_staging_intact(warehouse, len(recorded_listing(warehouse).snapshots))
    clean.assert_equal(warehouse)
    # The tables assembled anew from the staging, every part read, are the same too.
    assembled = tables.assemble(warehouse, recorded_listing(warehouse))
    assert all(assembled[name].equals(clean.tables[name]) for name in TABLE_NAMES)


def test_a_staged_part_damaged_inside_is_named_then_staged_again(clean, tmp_path):
    """Damage past what a footer shows (a page overwritten): the assembly names the part, without its
    bytes, and the run after it stages the snapshot again."""
    warehouse, cache = clean.copy(tmp_path / "w")
    part = staged_folder(warehouse) / "rows-00000.parquet"
    damaged_inside(part)
    shutil.rmtree(layout.Layout(warehouse).builds(layout.TABLES_STAGE))  # the tables are assembled again, reading every part
    with pytest.raises(store.DamagedFile) as caught:
        run_next(warehouse, cache, clean.source)
    assert_one_clear_line(str(caught.value), str(part))
    run_next(warehouse, cache, clean.source)
    assert_staging_intact(warehouse, len(recorded_listing(warehouse).snapshots))
    clean.assert_equal(warehouse)


LISTING_DAMAGES = {
    "truncated": truncated,
    "garbage": garbage,
    "empty": emptied,
    "wrong fields": lambda path: path.write_text(json.dumps({"snapshots": [{"x": 1}]})),
}


@pytest.mark.parametrize("damage", LISTING_DAMAGES)
def test_a_damaged_listing_is_synced_again(clean, tmp_path, damage):
    warehouse, cache = clean.copy(tmp_path / "w")
    LISTING_DAMAGES[damage](layout.Layout(warehouse).listing)
    source_settings = for_source(clean.source, "main", FILE_GLOB, cache)
    # The sensor does not fail on it: it asks for the run that lists the source again.
    assert check_upstream(warehouse, source_settings, None).files_at_head_changed
    # The tables alone (materialized without the source) say which file and what to do.
    with pytest.raises(store.DamagedFile) as caught:
        recorded_listing(warehouse)
    assert_one_clear_line(str(caught.value), str(layout.Layout(warehouse).listing), "upstream_source")
    run_next(warehouse, cache, clean.source)
    clean.assert_equal(warehouse)


MANIFEST_DAMAGES = {
    "truncated": truncated,
    "garbage": garbage,
    "a list": lambda path: path.write_text("[1]"),
    "no files": lambda path: path.write_text(json.dumps({"key": json.loads(path.read_text())["key"]})),
}


@pytest.mark.parametrize("damage", MANIFEST_DAMAGES)
@pytest.mark.parametrize("stage", [layout.TABLES_STAGE, layout.DATABASE_STAGE])
def test_a_damaged_build_manifest_means_a_rebuild(clean, tmp_path, stage, damage):
    warehouse, cache = clean.copy(tmp_path / "w")
    manifest = layout.Layout(warehouse).builds(stage) / layout.CURRENT / layout.MANIFEST
    MANIFEST_DAMAGES[damage](manifest)
    run_next(warehouse, cache, clean.source)
    clean.assert_equal(warehouse)
    assert json.loads(manifest.read_text())["result"]["row_counts"]


def without_database_builds(warehouse: Path) -> None:
    """As if the database had never been built from these tables: its next build reads every table."""
    shutil.rmtree(layout.Layout(warehouse).builds(layout.DATABASE_STAGE))


def test_a_damaged_table_is_named_when_the_statistics_run_alone(clean, tmp_path):
    warehouse, _ = clean.copy(tmp_path / "w")
    without_database_builds(warehouse)
    truncated(warehouse / "runs.parquet")
    with pytest.raises(store.DamagedFile) as caught:
        publish.build_database_if_changed(warehouse, BASELINES)
    assert_one_clear_line(str(caught.value), str(warehouse / "runs.parquet"))


def test_a_table_damaged_inside_is_named_by_the_statistics_and_rebuilt_by_the_next_run(clean, tmp_path):
    warehouse, cache = clean.copy(tmp_path / "w")
    table = warehouse / "runs.parquet"
    damaged_inside(table)
    without_database_builds(warehouse)
    with pytest.raises(store.DamagedFile) as caught:
        publish.build_database_if_changed(warehouse, BASELINES)
    assert_one_clear_line(str(caught.value), str(table))
    run_next(warehouse, cache, clean.source)
    clean.assert_equal(warehouse)


def test_a_damaged_snapshot_the_source_no_longer_has_is_named_with_what_to_do(tmp_path):
    """A CSV source lists only its current content: an older content's staging is the only copy."""
    csv = tmp_path / "runs.csv"
    source_settings = for_source(str(csv), "main", FILE_GLOB, tmp_path / "cache")
    warehouse = tmp_path / "warehouse"
    for version in range(2):
        csv.write_text(liger_csv(*rows(version, "NVIDIA A100-SXM4-80GB")))
        with store.writer_lock(warehouse):
            listing = sync(warehouse, source_settings)
            stage_new(warehouse, source_settings, listing)
            build_tables(warehouse, listing)
    before = read_tables(warehouse)
    metas = staging.staged_metas(warehouse)
    older = min(metas, key=lambda m: m.ingest_seq)
    folder = layout.Layout(warehouse).staged(older.snapshot_id)
    truncated(folder / "rows-00000.parquet")
    with pytest.raises(store.DamagedFile) as caught, store.writer_lock(warehouse):
        listing = sync(warehouse, source_settings)
        stage_new(warehouse, source_settings, listing)
    assert_one_clear_line(str(caught.value), str(folder), older.snapshot_id, "backup")
    assert folder.is_dir(), "the only copy of a snapshot was deleted"
    with pytest.raises(store.DamagedFile), store.writer_lock(warehouse):
        build_tables(warehouse, listing)
    assert all(read_tables(warehouse)[name].equals(before[name]) for name in TABLE_NAMES), "the tables changed"


@pytest.mark.slow
def test_materialize_repairs_a_damaged_runs_table_and_database(clean, tmp_path):
    """End to end: `python -m pipelines materialize` after damage exits 0 and leaves the warehouse whole."""
    warehouse, cache = clean.copy(tmp_path / "w")
    home = tmp_path / "dagster-home"
    home.mkdir()
    shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(warehouse),
        "LIGER_SOURCE": clean.source,
        "LIGER_CACHE_DIR": str(cache),
    }

    def materialize() -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "pipelines", "materialize"]
        return subprocess.run(command, check=False, env=env, cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=600)

    first = materialize()
    assert first.returncode == 0, first.stderr[-2000:]
    truncated(warehouse / "runs.parquet")
    garbage(db.database_path(warehouse))
    repaired = materialize()
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    clean.assert_equal(warehouse)
