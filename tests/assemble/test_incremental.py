"""Ingesting history commit by commit gives, table by table, what ingesting it all at once gives;
and a run with nothing new upstream parses nothing and rewrites nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest
from conftest import FILE_GLOB, git, liger_csv, liger_row
from polars.testing import assert_frame_equal

from pipelines.assemble.tables_build import TABLE_NAMES, build_tables
from pipelines.core.settings import for_source
from pipelines.ingest.steps import stage_new, sync
from pipelines.statistics import database_build, db
from pipelines.storage import store

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"


def ingest(warehouse: Path, source: Path, cache: Path):
    """One scheduled run's worth of work, without Dagster: (stage report, tables report)."""
    settings = for_source(str(source), "main", FILE_GLOB, cache)
    with store.writer_lock(warehouse):
        listing = sync(warehouse, settings)
        staged = stage_new(warehouse, settings, listing)
        built = build_tables(warehouse, listing)
    return staged, built


def replay_and_compare(source: Path, tmp_path: Path) -> Path:
    """Move `main` of the bare repo `source` through its history one commit at a time, ingesting
    after each move; then ingest the final head into a fresh warehouse and compare every table."""
    commits = git(source, "rev-list", "--reverse", "--first-parent", "main").split()
    step_by_step = tmp_path / "step-by-step"
    for count, commit in enumerate(commits, 1):
        git(source, "update-ref", "refs/heads/main", commit)
        staged, _ = ingest(step_by_step, source, tmp_path / "cache-steps")
        listed = git(source, "log", "--format=%H", "--first-parent", "--diff-filter=AM", "main", "--", FILE_GLOB).split()
        assert pl.read_parquet(step_by_step / "snapshots.parquet")["commit"].n_unique() == len(listed), count
        # Each step parses only the snapshots of the commit it moved to.
        assert {s.split("/")[0] for s in staged.staged} <= {commit[:12]}, count

    at_once = tmp_path / "at-once"
    ingest(at_once, source, tmp_path / "cache-once")
    for name in TABLE_NAMES:
        assert_frame_equal(
            pl.read_parquet(step_by_step / f"{name}.parquet"), pl.read_parquet(at_once / f"{name}.parquet"), check_exact=True
        )
    assert (step_by_step / "_source.json").read_text() == (at_once / "_source.json").read_text()
    return step_by_step


def assert_nothing_rewritten(warehouse: Path, source: Path, cache: Path) -> None:
    before = {name: (warehouse / f"{name}.parquet").stat() for name in TABLE_NAMES}
    staged, built = ingest(warehouse, source, cache)
    assert staged.staged == [] and staged.already == staged.listed > 0
    assert built.rewritten is False
    for name, stat in before.items():
        after = (warehouse / f"{name}.parquet").stat()
        assert (after.st_ino, after.st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns), name


def bare_clone(origin: Path, target: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--bare", str(origin), str(target)], check=True)
    return target


def test_small_history_replayed_commit_by_commit_equals_one_shot(upstream_repo, tmp_path):
    # Overwritten rows, a second file, a commit touching no data, a deleted file: what history holds.
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch", y50="0.9", y20="0.8", y80="1"))}, "one")
    upstream_repo.commit(
        # torch's run stays as it was (with other values at the same timestamp it would be a conflict, SPEC section 5).
        {
            DATA: liger_csv(
                liger_row(timestamp="2025-02-01 00:00:00", y50="0.45"), liger_row(provider="torch", y50="0.9", y20="0.8", y80="1")
            )
        },
        "overwrite",
    )
    upstream_repo.commit({CUTILE: liger_csv(liger_row(provider="cutile", y50="bad"))}, "cutile")
    upstream_repo.commit({"README.md": "docs\n"}, "docs")
    git(upstream_repo.path, "rm", "--quiet", CUTILE)
    git(upstream_repo.path, "commit", "--quiet", "-m", "drop cutile")
    source = bare_clone(upstream_repo.path, tmp_path / "source.git")

    warehouse = replay_and_compare(source, tmp_path)
    runs = pl.read_parquet(warehouse / "runs.parquet")
    assert runs.height == 3 and runs["in_latest"].sum() == 2
    assert pl.read_parquet(warehouse / "quarantine.parquet").height == 1
    assert_nothing_rewritten(warehouse, source, tmp_path / "cache-steps")


@pytest.mark.slow
def test_bundle_history_replayed_commit_by_commit_equals_one_shot(real_bundle, tmp_path):
    source = bare_clone(real_bundle, tmp_path / "source.git")
    assert len(git(source, "rev-list", "main").split()) == 39

    warehouse = replay_and_compare(source, tmp_path)
    snapshots = pl.read_parquet(warehouse / "snapshots.parquet")
    assert snapshots.height == 40 and pl.read_parquet(warehouse / "runs.parquet").height == 4421
    assert_nothing_rewritten(warehouse, source, tmp_path / "cache-steps")

    # The statistics read only the tables, so they agree too.
    for folder in (warehouse, tmp_path / "at-once"):
        database_build.build_database(folder, ["huggingface", "torch"])
    for name in db.STATISTICS:
        sql = f"SELECT * FROM {name} ORDER BY ALL"
        assert db.query(warehouse, sql).rows == db.query(tmp_path / "at-once", sql).rows, name


@pytest.mark.slow
def test_the_ci_history_replayed_in_steps_equals_one_shot(upstream_bundle, tmp_path):
    """Both streams: upstream's CI branch moved through its history in steps (as weekly ticks of the sensor would
    find it), `main` at its head; every table, and every statistic, equal to one ingest of the last head."""
    source = bare_clone(upstream_bundle, tmp_path / "source.git")
    commits = git(source, "rev-list", "--reverse", "--first-parent", "gh-pages").split()
    assert len(commits) == 71  # first-parent: the 87 commits of gh-pages include its merges
    step_by_step, at_once = tmp_path / "step-by-step", tmp_path / "at-once"
    for commit in [*commits[::10], commits[-1]]:
        git(source, "update-ref", "refs/heads/gh-pages", commit)
        ingest(step_by_step, source, tmp_path / "cache-steps")
    ingest(at_once, source, tmp_path / "cache-once")
    for name in TABLE_NAMES:
        assert_frame_equal(
            pl.read_parquet(step_by_step / f"{name}.parquet"), pl.read_parquet(at_once / f"{name}.parquet"), check_exact=True
        )
    assert pl.read_parquet(at_once / "runs.parquet").height == 90207
    for folder in (step_by_step, at_once):
        database_build.build_database(folder, ["huggingface", "torch"])
    for name in db.STATISTICS:
        sql = f"SELECT * FROM {name} ORDER BY ALL"
        assert db.query(step_by_step, sql).rows == db.query(at_once, sql).rows, name


@pytest.mark.parametrize("moves", [["first", "last"], ["last"]])
def test_ingest_order_does_not_matter_for_a_jump(upstream_repo, tmp_path, moves):
    """Skipping intermediate commits (a sensor that woke late) still lands on the same tables."""
    first = upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(x_value="2048"))}, "two")
    last = upstream_repo.commit({DATA: liger_csv(liger_row(x_value="2048"))}, "three")
    source = bare_clone(upstream_repo.path, tmp_path / "source.git")
    warehouse = tmp_path / "warehouse"
    for move in moves:
        git(source, "update-ref", "refs/heads/main", first if move == "first" else last)
        ingest(warehouse, source, tmp_path / "cache")
    runs = pl.read_parquet(warehouse / "runs.parquet")
    assert runs.height == 2
    assert pl.read_parquet(warehouse / "snapshots.parquet").height == 3
