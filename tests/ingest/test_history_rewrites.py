"""Upstream's history is the truth, whatever it does (SPEC section 1): a force-push that drops or rewrites commits,
a switch of branch, a shallow clone. After a rewrite the warehouse equals a clean build from the rewritten history,
except that what only the old history held is kept and marked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest
from conftest import FILE_GLOB, UpstreamRepo, git, liger_csv, liger_row
from polars.testing import assert_frame_equal

from pipelines.assemble.tables_build import TablesReport, build_tables
from pipelines.core.settings import for_source
from pipelines.exports.liger_csv import latest_snapshots, rebuild, resolve_snapshot
from pipelines.ingest.source.listing import ShallowSource, SourceError
from pipelines.ingest.steps import stage_new, sync
from pipelines.storage import store

DATA = "benchmark/data/all_benchmark_data.csv"


def ingest(warehouse: Path, source: Path | str, cache: Path, branch: str = "main") -> TablesReport:
    settings = for_source(str(source), branch, FILE_GLOB, cache)
    with store.writer_lock(warehouse):
        listing = sync(warehouse, settings)
        stage_new(warehouse, settings, listing)
        return build_tables(warehouse, listing)


def git_show(repo: Path, spec: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "show", spec], check=True, capture_output=True).stdout


def table(warehouse: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(warehouse / f"{name}.parquet")


def four_commits(repo: UpstreamRepo) -> None:
    rows = [liger_row(timestamp="2025-01-01 10:00:00")]
    for day in range(1, 5):
        rows = [*rows[-1:], liger_row(provider="torch", timestamp=f"2025-01-0{day} 12:00:00", y50=f"0.{day + 5}")]
        repo.commit({DATA: liger_csv(*rows)}, f"day {day}", f"2025-01-0{day}T13:00:00Z")


def assert_clean_build_plus_marked(warehouse: Path, source: Path, tmp_path: Path) -> None:
    """The warehouse equals a clean build of `source` as it is now, once what is marked off the branch is set aside."""
    clean = tmp_path / "clean"
    ingest(clean, source, tmp_path / "clean-cache")
    on = {name: table(warehouse, name) for name in ("runs", "snapshots")}
    assert_frame_equal(on["runs"].filter(pl.col("on_branch")), table(clean, "runs"), check_exact=True)
    assert_frame_equal(on["snapshots"].filter(pl.col("on_branch")), table(clean, "snapshots"), check_exact=True)
    kept = set(on["snapshots"].filter(~pl.col("on_branch"))["snapshot_id"])
    mapped = table(warehouse, "run_snapshots").filter(~pl.col("snapshot_id").is_in(list(kept)))
    assert_frame_equal(mapped, table(clean, "run_snapshots"), check_exact=True)


def test_a_force_push_that_drops_commits_moves_latest_back_and_keeps_what_it_dropped(upstream_repo, tmp_path):
    four_commits(upstream_repo)
    warehouse, cache = tmp_path / "warehouse", tmp_path / "cache"
    ingest(warehouse, upstream_repo.path, cache)
    assert table(warehouse, "runs").height == 5
    git(upstream_repo.path, "reset", "--quiet", "--hard", "HEAD~2")
    report = ingest(warehouse, upstream_repo.path, cache)
    assert report.moved is not None and "2 snapshot(s) are no longer on their branch" in report.moved
    assert "2 run(s) only it holds" in report.moved
    snapshots = table(warehouse, "snapshots")
    assert snapshots.filter(~pl.col("on_branch")).height == 2 and not snapshots.filter(~pl.col("on_branch"))["is_latest"].any()
    runs = table(warehouse, "runs")
    # Latest follows the branch as it is now: day 2's file, not day 4's.
    assert sorted(runs.filter(pl.col("in_latest"))["raw_timestamp"].to_list()) == ["2025-01-01 12:00:00", "2025-01-02 12:00:00"]
    assert runs.filter(~pl.col("on_branch")).height == 2
    assert_clean_build_plus_marked(warehouse, upstream_repo.path, tmp_path)
    # Pushed back, the snapshots are on the branch again and the warehouse is what it was.
    git(upstream_repo.path, "reset", "--quiet", "--hard", "HEAD@{1}")
    report = ingest(warehouse, upstream_repo.path, cache)
    assert report.moved is not None and "2 snapshot(s) are on it again" in report.moved
    assert table(warehouse, "runs")["on_branch"].all() and table(warehouse, "runs").filter(pl.col("in_latest")).height == 2


def test_a_force_push_that_rewrites_the_head_commit_takes_the_new_values(upstream_repo, tmp_path):
    four_commits(upstream_repo)
    warehouse, cache = tmp_path / "warehouse", tmp_path / "cache"
    ingest(warehouse, upstream_repo.path, cache)
    rows = [
        liger_row(provider="torch", timestamp="2025-01-03 12:00:00", y50="0.8"),
        liger_row(provider="torch", timestamp="2025-01-04 12:00:00", y50="0.99"),
    ]
    (upstream_repo.path / DATA).write_text(liger_csv(*rows))
    git(upstream_repo.path, "commit", "--quiet", "--amend", "-a", "-m", "day 4, measured again", date="2025-01-04T14:00:00Z")
    ingest(warehouse, upstream_repo.path, cache)
    runs = table(warehouse, "runs")
    changed = runs.filter(pl.col("raw_timestamp") == "2025-01-04 12:00:00")
    assert changed["raw_y_value_50"].to_list() == ["0.99"] and changed["on_branch"].to_list() == [True]
    sequences = table(warehouse, "snapshots").filter(pl.col("on_branch"))["sequence"]
    assert sequences.is_unique().all()
    assert_clean_build_plus_marked(warehouse, upstream_repo.path, tmp_path)


def test_another_branch_is_another_source(upstream_repo, tmp_path):
    four_commits(upstream_repo)
    git(upstream_repo.path, "branch", "other", "HEAD~1")
    warehouse, cache = tmp_path / "warehouse", tmp_path / "cache"
    ingest(warehouse, upstream_repo.path, cache)
    before = table(warehouse, "snapshots")
    with pytest.raises(SourceError, match=r"branch 'main'.*not from .*branch 'other'.*LIGER_BRANCH") as refused:
        ingest(warehouse, upstream_repo.path, cache, branch="other")
    assert "\n" not in str(refused.value)
    assert_frame_equal(table(warehouse, "snapshots"), before)
    # The latest export is still main's newest file, byte for byte.
    [latest] = latest_snapshots(warehouse)
    assert rebuild(warehouse, resolve_snapshot(warehouse, "latest")) == git_show(upstream_repo.path, f"main:{DATA}")
    assert latest.snapshot_id.startswith(git(upstream_repo.path, "rev-parse", "main")[:12])


def test_a_shallow_source_is_refused_and_read_whole_once_unshallowed(upstream_repo, tmp_path):
    four_commits(upstream_repo)
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", f"file://{upstream_repo.path}", str(shallow)], check=True)
    warehouse, cache = tmp_path / "warehouse", tmp_path / "cache"
    with pytest.raises(ShallowSource, match="shallow clone.*git fetch --unshallow"):
        ingest(warehouse, shallow, cache)
    assert not (warehouse / "snapshots.parquet").exists()
    git(shallow, "fetch", "--quiet", "--unshallow")
    # The cache's clone was made shallow by the first try: the next run deepens it.
    ingest(warehouse, shallow, cache)
    assert table(warehouse, "snapshots").height == 4


@pytest.mark.slow
def test_a_force_push_of_the_real_ci_history_is_followed(upstream_bundle, tmp_path):
    """A copy of the bundle whose gh-pages loses its newest benchmark folders to a force-push, then gets them back."""
    source = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "--quiet", "--mirror", str(upstream_bundle), str(source)], check=True)
    settings = for_source(str(source), "main", FILE_GLOB, tmp_path / "cache", streams=("data", "ci"))
    warehouse = tmp_path / "warehouse"

    def run() -> TablesReport:
        with store.writer_lock(warehouse):
            listing = sync(warehouse, settings)
            stage_new(warehouse, settings, listing)
            return build_tables(warehouse, listing)

    run()
    head = git(source, "rev-parse", "gh-pages")
    # Back before "Add benchmark for commit e6f84b8": the two newest benchmarked commits leave the branch.
    before = git(source, "log", "--format=%H", "--grep=Add benchmark for commit e6f84b8", "gh-pages")
    git(source, "update-ref", "refs/heads/gh-pages", f"{before}~1")
    report = run()
    assert report.moved is not None and "2 snapshot(s) are no longer on their branch" in report.moved
    snapshots, runs = table(warehouse, "snapshots"), table(warehouse, "runs")
    gone = snapshots.filter(~pl.col("on_branch"))
    assert sorted(gone["benchmarked_commit"]) == ["ab7fe2a", "e6f84b8"] and not gone["is_latest"].any()
    assert set(runs.filter(~pl.col("on_branch"))["benchmarked_commit"]) == {"ab7fe2a", "e6f84b8"}
    assert runs.filter(pl.col("in_latest") & pl.col("benchmarked_commit").is_in(["ab7fe2a", "e6f84b8"])).is_empty()
    assert_clean_build_plus_marked(warehouse, source, tmp_path)
    git(source, "update-ref", "refs/heads/gh-pages", head)
    again = run()
    assert again.moved is not None and "2 snapshot(s) are on it again" in again.moved
    assert table(warehouse, "snapshots")["on_branch"].all() and table(warehouse, "runs")["on_branch"].all()


def test_an_orphan_force_push_that_changes_values_names_how_many_and_which_kernels(upstream_repo, tmp_path):
    """The branch as it is now wins, the old rows stay in quarantine naming both snapshots, and the run's line says
    how many runs changed value, their kernels, and the query that lists them."""
    kept = liger_row(kernel="geglu", timestamp="2025-01-01 10:00:00")
    measured = liger_row(provider="torch", timestamp="2025-01-01 11:00:00", y50="0.8")
    upstream_repo.commit({DATA: liger_csv(kept, measured)}, "data", "2025-01-01T12:00:00Z")
    warehouse, cache = tmp_path / "warehouse", tmp_path / "cache"
    ingest(warehouse, upstream_repo.path, cache)
    git(upstream_repo.path, "checkout", "--quiet", "--orphan", "rewritten")
    remeasured = liger_row(provider="torch", timestamp="2025-01-01 11:00:00", y50="0.85")
    (upstream_repo.path / DATA).write_text(liger_csv(kept, remeasured))
    git(upstream_repo.path, "add", "-A")
    git(upstream_repo.path, "commit", "--quiet", "-m", "history rewritten", date="2025-01-02T12:00:00Z")
    git(upstream_repo.path, "branch", "--quiet", "-M", "main")
    report = ingest(warehouse, upstream_repo.path, cache)
    assert report.moved is not None and "1 run(s) changed value (rms_norm; `python -m pipelines sql" in report.moved
    assert "\n" not in report.moved
    runs = table(warehouse, "runs")
    assert runs.filter(pl.col("provider") == "torch")["raw_y_value_50"].to_list() == ["0.85"]
    query = report.moved.split('`python -m pipelines sql "', 1)[1].split('"`', 1)[0]
    from pipelines.statistics import database_build, db

    database_build.build_database(warehouse, ("huggingface", "torch"))
    [(snapshot, reason)] = db.query(warehouse, query).rows
    assert (
        "y_value_50: 0.85 there, 0.8 here" in reason
        and snapshot != table(warehouse, "snapshots").filter(pl.col("on_branch"))["snapshot_id"][0]
    )
