"""A benchmarked commit's place in `main` (SPEC section 8: a series follows it where it is known): the sync reads
the data stream's first-parent line, places each CI folder's commit in it (by its id, or by an `Upstream-Commit:`
trailer of a filtered copy), and the view commit_places orders the series by it, not by when it was benchmarked."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from conftest import UpstreamRepo, build_warehouse, git, liger_csv, liger_row

from bench import verdict as bench_verdict
from pipelines.core import settings
from pipelines.ingest.source.git_source import place_in_main
from pipelines.ingest.source.listing import MainCommit, SnapshotRef
from pipelines.ingest.steps import recorded_listing
from pipelines.statistics import database_build, db

DATA = "benchmark/data/all_benchmark_data.csv"
H100 = "NVIDIA H100 80GB HBM3"


def ci_csv(timestamp: str, y50: str) -> str:
    return liger_csv(liger_row(gpu=H100, timestamp=timestamp, y50=y50, y20=y50, y80=y50, version="0.6.0"))


def with_ci(repo: UpstreamRepo, folders: list[tuple[str, str, str]]) -> None:
    """`gh-pages` with one folder per (name, benchmark time, value), added in that order."""
    git(repo.path, "checkout", "--quiet", "--orphan", "gh-pages")
    git(repo.path, "rm", "-r", "--quiet", "--cached", ".")
    git(repo.path, "clean", "-fdq")
    for name, when, y50 in folders:
        repo.commit(
            {f"benchmarks/{name}/benchmark.csv": ci_csv(when, y50)}, f"Add benchmark for commit {name}", f"{when.replace(' ', 'T')}Z"
        )
    git(repo.path, "checkout", "--quiet", "main")


def warehouse_of(repo: UpstreamRepo, tmp_path: Path) -> Path:
    warehouse = build_warehouse(tmp_path / "warehouse", str(repo.path), tmp_path / "cache", streams=("data", "ci"))
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    return warehouse


def places(warehouse: Path) -> list[tuple]:
    """(benchmarked commit, main_position) in the order commit_places gives them."""
    found = db.query(warehouse, "SELECT benchmarked_commit, main_position FROM commit_places ORDER BY commit_at").records()
    return [(row["benchmarked_commit"], row["main_position"]) for row in found]


def test_commits_benchmarked_out_of_order_take_their_place_in_main(upstream_repo: UpstreamRepo, tmp_path: Path):
    main = [upstream_repo.commit({DATA: liger_csv(liger_row())}, "data", "2025-01-01T00:00:00Z")]
    for day in range(2, 6):
        main.append(upstream_repo.commit({"src/kernel.py": f"version {day}\n"}, f"code {day}", f"2025-01-0{day}T00:00:00Z"))
    short = [commit[:7] for commit in main]
    # The newest commit benchmarked first, an older one a week later, then the head: the benchmarks' order is not main's.
    with_ci(
        upstream_repo,
        [(short[3], "2025-02-01 00:00:00", "2.0"), (short[1], "2025-02-08 00:00:00", "1.0"), (short[4], "2025-02-15 00:00:00", "2.0")],
    )
    warehouse = warehouse_of(upstream_repo, tmp_path)

    snapshots = pl.read_parquet(warehouse / "snapshots.parquet").filter(pl.col("stream") == "ci").sort("sequence")
    assert snapshots.select("benchmarked_commit", "main_commit", "main_position").rows() == [
        (short[3], main[3], 4),
        (short[1], main[1], 2),
        (short[4], main[4], 5),
    ]
    assert snapshots["main_committed_at"].to_list()[1] == datetime(2025, 1, 2, tzinfo=UTC)
    assert places(warehouse) == [(short[1], 2), (short[3], 4), (short[4], 5)], "main's order, not the benchmarks'"
    # The series read in that order: the older commit's fast point first, then the two slow ones.
    series = db.query(warehouse, _series_points(), {"lo": None, "hi": None}).records()
    assert [row["value"] for row in series if row["value"] != 500_000] == [1_000_000, 2_000_000, 2_000_000]
    # `python -m bench.verdict` runs the same view over the tables it cuts per week: one ordering.
    tables = {name: pl.read_parquet(warehouse / f"{name}.parquet") for name in ("runs", "snapshots")}
    assert bench_verdict.commit_places(tables["runs"], tables["snapshots"]).sort("commit_at")["benchmarked_commit"].to_list() == [
        short[1],
        short[3],
        short[4],
    ]
    # The next sync reads the recorded listing back with the places and their times.
    recorded = {ref.benchmarked_commit: ref for ref in recorded_listing(warehouse).snapshots if ref.stream == "ci"}
    assert recorded[short[1]].main_committed_at == datetime(2025, 1, 2, tzinfo=UTC)


def _series_points() -> str:
    from pipelines.core import sql_files

    return sql_files.text("series/series_points")


def test_a_filtered_main_places_commits_by_their_upstream_commit_trailers(upstream_repo: UpstreamRepo, tmp_path: Path):
    # Like the offline bundle: main holds only data commits, each naming the real upstream commit it stands for.
    real = ["1" * 40, "2" * 40, "3" * 40]
    upstream_repo.commit({DATA: liger_csv(liger_row())}, f"data\n\nUpstream-Commit: {real[0]}", "2025-01-01T00:00:00Z")
    upstream_repo.commit({DATA: liger_csv(liger_row(y50="0.51"))}, f"more data\n\nUpstream-Commit: {real[2]}", "2025-01-10T00:00:00Z")
    # real[2] is benchmarked first, real[0] later; "abcdef1" names no commit of this main (a fork's, say).
    with_ci(
        upstream_repo,
        [
            (real[2][:7], "2025-02-01 00:00:00", "2.0"),
            (real[0][:7], "2025-02-08 00:00:00", "1.0"),
            ("abcdef1", "2025-02-10 00:00:00", "1.0"),
        ],
    )
    warehouse = warehouse_of(upstream_repo, tmp_path)

    assert places(warehouse) == [(real[0][:7], 1), (real[2][:7], 2), ("abcdef1", None)]
    found = db.query(warehouse, "SELECT benchmarked_commit, commit_at FROM commit_places").records()
    at = {row["benchmarked_commit"]: row["commit_at"] for row in found}
    assert at["abcdef1"] == datetime(2025, 2, 10, tzinfo=UTC), "not in main: placed when it was first benchmarked"
    assert at[real[0][:7]] == datetime(2025, 1, 1, tzinfo=UTC)


def test_an_abbreviation_that_names_two_commits_of_main_is_not_placed():
    when = datetime(2025, 1, 1, tzinfo=UTC)
    main = (MainCommit("abcdef1" + "0" * 33, 1, when), MainCommit("abcdef1" + "f" * 33, 2, when), MainCommit("1234567" + "0" * 33, 3, when))
    refs = tuple(
        SnapshotRef(f"s{i}/benchmark.csv", "repo", "b.csv", "c", when, None, i, stream="ci", benchmarked_commit=name)
        for i, name in enumerate(("abcdef1", "1234567", "abcdef1" + "f"))
    )
    placed = place_in_main(refs, main)
    assert [ref.main_position for ref in placed] == [None, 3, 2]
    # A trailer naming the commit wins over a commit of the copy whose own id happens to start alike.
    main = (MainCommit("1234567" + "0" * 33, 1, when), MainCommit("9" * 40, 2, when, upstream_commits=("1234567" + "a" * 33,)))
    assert place_in_main(refs[1:2], main)[0].main_position == 2


def test_a_rewritten_main_moves_the_places_at_the_next_sync(upstream_repo: UpstreamRepo, tmp_path: Path):
    main = [upstream_repo.commit({DATA: liger_csv(liger_row())}, "data", "2025-01-01T00:00:00Z")]
    for day in range(2, 5):
        main.append(upstream_repo.commit({"src/kernel.py": f"version {day}\n"}, f"code {day}", f"2025-01-0{day}T00:00:00Z"))
    with_ci(upstream_repo, [(main[3][:7], "2025-02-01 00:00:00", "2.0"), (main[1][:7], "2025-02-08 00:00:00", "1.0")])
    assert places(warehouse_of(upstream_repo, tmp_path)) == [(main[1][:7], 2), (main[3][:7], 4)]
    # A force-push drops the two newest commits of main and puts another in their place.
    git(upstream_repo.path, "reset", "--quiet", "--hard", main[1])
    upstream_repo.commit({"src/kernel.py": "rewritten\n"}, "rewritten", "2025-01-05T00:00:00Z")
    assert places(warehouse_of(upstream_repo, tmp_path)) == [(main[1][:7], 2), (main[3][:7], None)]
