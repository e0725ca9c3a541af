"""Both streams of one repository (SPEC section 7): `main`'s data files and `gh-pages`' CI folders, as upstream
publishes them, deploys that wipe and restore the branch, folders rewritten, and a copy of the data file."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from conftest import FILE_GLOB, UpstreamRepo, git, liger_csv, liger_row

from pipelines.assemble.tables_build import build_tables
from pipelines.core.settings import Settings, for_source
from pipelines.ingest.source.listing import BranchNotFound
from pipelines.ingest.steps import stage_new, sync
from pipelines.storage import store

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"
H100 = "NVIDIA H100 80GB HBM3"


def both(source: Path, cache: Path, **ci) -> Settings:
    return for_source(str(source), "main", FILE_GLOB, cache, streams=("data", "ci"), **ci)


def ingest(warehouse: Path, settings: Settings) -> dict[str, pl.DataFrame]:
    with store.writer_lock(warehouse):
        listing = sync(warehouse, settings)
        stage_new(warehouse, settings, listing)
        build_tables(warehouse, listing)
    return {name: pl.read_parquet(warehouse / f"{name}.parquet") for name in ("runs", "snapshots", "run_snapshots")}


def ci_row(commit_time: str, y50: str, provider: str = "liger") -> str:
    return liger_row(provider=provider, gpu=H100, timestamp=commit_time, y50=y50, y20=y50, y80=y50, version="0.6.0")


def upstream_with_ci(repo: UpstreamRepo) -> dict[str, str]:
    """`main` with the data files; `gh-pages` with two benchmarked commits (one a release), a documentation deploy that
    deletes everything, the restore, and a folder rewritten only to change its line endings."""
    repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch", y50="0.9", y20="0.8", y80="1"))}, "data", "2025-01-01T00:00:00Z")
    cutile = liger_row(y50="0.2", y20="0.2", y80="0.2", timestamp="2025-01-02 10:00:00")
    repo.commit({CUTILE: liger_csv(cutile)}, "cutile", "2025-01-02T00:00:00Z")
    git(repo.path, "checkout", "--quiet", "--orphan", "gh-pages")
    git(repo.path, "rm", "-r", "--quiet", "--cached", ".")
    for stale in ("benchmark",):
        git(repo.path, "clean", "-fdq", stale)
    first = liger_csv(ci_row("2025-02-01 00:00:00", "1.0"), ci_row("2025-02-01 00:00:00", "2.0", "torch"))
    ids = {"first": repo.commit({"benchmarks/aaaaaaa/benchmark.csv": first}, "Add benchmark for commit aaaaaaa", "2025-02-01T01:00:00Z")}
    second = liger_csv(ci_row("2025-02-08 00:00:00", "1.5"), ci_row("2025-02-08 00:00:00", "2.0", "torch"))
    repo.commit({"benchmarks/bbbbbbb-v0.7.0/benchmark.csv": second}, "Add benchmark for commit bbbbbbb-v0.7.0", "2025-02-08T01:00:00Z")
    git(repo.path, "rm", "-r", "--quiet", "benchmarks")
    repo.commit({"index.html": "docs\n"}, "Deployed 1234567 with MkDocs", "2025-02-09T00:00:00Z")
    repo.commit(
        {"benchmarks/aaaaaaa/benchmark.csv": first, "benchmarks/bbbbbbb-v0.7.0/benchmark.csv": second},
        "Restore benchmarks after gh-deploy",
        "2025-02-09T00:00:01Z",
    )
    repo.commit({"benchmarks/aaaaaaa/benchmark.csv": first.replace("\n", "\r\n")}, "line endings", "2025-02-10T00:00:00Z")
    # A folder holding a copy of the data stream's file: its runs are the data stream's runs.
    repo.commit({"benchmarks/ccccccc/benchmark.csv": liger_csv(liger_row())}, "Add benchmark for commit ccccccc", "2025-02-11T00:00:00Z")
    git(repo.path, "checkout", "--quiet", "main")
    return ids


def test_both_streams_are_one_history_with_one_snapshot_per_distinct_content(upstream_repo, tmp_path):
    upstream_with_ci(upstream_repo)
    tables = ingest(tmp_path / "warehouse", both(upstream_repo.path, tmp_path / "cache"))
    snapshots = tables["snapshots"]
    # 2 data snapshots; CI: aaaaaaa twice (its line endings changed), bbbbbbb once (the restore brought the same bytes), ccccccc.
    assert snapshots.group_by("stream").len().sort("stream").rows() == [("ci", 4), ("data", 2)]
    ci = snapshots.filter(pl.col("stream") == "ci").sort("sequence")
    assert ci["benchmarked_commit"].to_list() == ["aaaaaaa", "bbbbbbb", "aaaaaaa", "ccccccc"]
    assert ci["release"].to_list() == [None, "0.7.0", None, None]
    assert ci["line_end"].to_list() == ["\n", "\n", "\r\n", "\n"]
    assert snapshots["on_branch"].all()
    # Merged by commit time: the data stream's two commits come first.
    assert snapshots.sort("sequence")["stream"].to_list() == ["data", "data", "ci", "ci", "ci", "ci"]
    assert snapshots.filter(pl.col("is_latest"))["source_file"].sort().to_list() == [
        "benchmark/data/all_benchmark_data.csv",
        "benchmark/data/all_benchmark_data_cutile.csv",
        "benchmarks/aaaaaaa/benchmark.csv",
        "benchmarks/bbbbbbb-v0.7.0/benchmark.csv",
        "benchmarks/ccccccc/benchmark.csv",
    ]
    runs = tables["runs"]
    # The ccccccc copy of the data file holds the data stream's liger run: one run, seen in both streams.
    copied = runs.filter((pl.col("provider") == "liger") & (pl.col("gpu_name") != H100) & (pl.col("backend") == "triton"))
    assert copied.height == 1 and copied["stream"].item() == "data" and copied["benchmarked_commit"].item() == "ccccccc"
    assert runs.height == 3 + 4
    assert sorted(runs.filter(pl.col("gpu_name") == H100)["benchmarked_commit"].unique().to_list()) == ["aaaaaaa", "bbbbbbb"]
    assert runs.filter(pl.col("benchmarked_commit") == "bbbbbbb")["release"].unique().to_list() == ["0.7.0"]
    assert runs.group_by("backend").len().sort("backend").rows() == [("cutile", 1), ("triton", 6)]
    assert (tables["run_snapshots"].height, snapshots["accepted"].sum()) == (10, 10)


def test_a_source_without_the_ci_branch_has_an_empty_ci_stream_unless_the_branch_is_named(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "data")
    tables = ingest(tmp_path / "warehouse", both(upstream_repo.path, tmp_path / "cache"))
    assert tables["snapshots"]["stream"].to_list() == ["data"]
    with pytest.raises(BranchNotFound, match="gh-pages"):
        ingest(tmp_path / "other", both(upstream_repo.path, tmp_path / "cache", ci_branch="gh-pages"))


def test_the_ci_stream_alone_and_from_another_repository(upstream_repo, tmp_path):
    upstream_with_ci(upstream_repo)
    elsewhere = UpstreamRepo(tmp_path / "data-only")
    elsewhere.commit({DATA: liger_csv(liger_row(y50="0.3"))}, "data")
    settings = both(elsewhere.path, tmp_path / "cache", ci_source=str(upstream_repo.path))
    tables = ingest(tmp_path / "warehouse", settings)
    assert tables["snapshots"].group_by("stream").len().sort("stream").rows() == [("ci", 4), ("data", 1)]
    alone = for_source(str(upstream_repo.path), "main", FILE_GLOB, tmp_path / "cache", streams=("ci",))
    assert set(ingest(tmp_path / "ci-only", alone)["snapshots"]["stream"]) == {"ci"}


@pytest.mark.slow
def test_a_new_ci_folder_is_one_new_partition_and_one_run_of_the_sensor(upstream_repo, tmp_path):
    import dagster as dg
    from test_operations import ingested, partitions_staged, run_request, tick

    from pipelines.defs.resources import Warehouse

    upstream_with_ci(upstream_repo)
    warehouse = Warehouse(
        warehouse_dir=str(tmp_path / "warehouse"),
        source=str(upstream_repo.path),
        branch="main",
        file_glob=FILE_GLOB,
        streams=["data", "ci"],
        cache_dir=str(tmp_path / "cache"),
        baselines=["huggingface", "torch"],
    )
    with dg.DagsterInstance.ephemeral() as instance:
        ingested(warehouse, instance)
        cursor = tick(warehouse, None, instance).cursor
        assert tick(warehouse, cursor, instance).run_requests == []
        git(upstream_repo.path, "checkout", "--quiet", "gh-pages")
        rows = liger_csv(ci_row("2025-03-01 00:00:00", "1.2"))
        upstream_repo.commit({"benchmarks/ddddddd/benchmark.csv": rows}, "Add benchmark for commit ddddddd", "2025-03-01T01:00:00Z")
        git(upstream_repo.path, "checkout", "--quiet", "main")
        result = tick(warehouse, cursor, instance)
        [request] = result.run_requests
        [added] = [key for r in result.dynamic_partitions_requests for key in r.partition_keys]
        assert added.endswith("/ddddddd/benchmark.csv")
        ran = run_request(warehouse, request, instance)
        assert ran.success and partitions_staged(ran) == [added]
    runs = pl.read_parquet(tmp_path / "warehouse" / "runs.parquet")
    assert runs.filter(pl.col("benchmarked_commit") == "ddddddd").height == 1


def test_a_deleted_ci_branch_is_named_as_such_not_as_a_rewrite(upstream_repo, tmp_path):
    """gh-pages deleted upstream: the run says the branch is gone and the ci stream empty; its snapshots are kept."""
    upstream_with_ci(upstream_repo)
    warehouse, settings = tmp_path / "warehouse", both(upstream_repo.path, tmp_path / "cache")
    ingest(warehouse, settings)
    git(upstream_repo.path, "branch", "--quiet", "-D", "gh-pages")
    with store.writer_lock(warehouse):
        listing = sync(warehouse, settings)
        stage_new(warehouse, settings, listing)
        report = build_tables(warehouse, listing)
    assert report.moved is not None and report.moved.startswith(
        "upstream deleted a branch: the branch gh-pages is gone: the ci stream is empty"
    )
    assert "no longer on their branch" not in report.moved and "(4 snapshot(s) went with it)" in report.moved
    snapshots = pl.read_parquet(warehouse / "snapshots.parquet")
    assert snapshots.filter(pl.col("stream") == "ci")["on_branch"].to_list() == [False] * 4
    assert snapshots.filter(pl.col("stream") == "data")["on_branch"].all()


def test_a_folder_renamed_to_its_release_name_gives_its_runs_the_release(upstream_repo, tmp_path):
    """Upstream renames `<commit>/` to `<commit>-v<version>/` once the commit is released: the runs it carries, first
    seen in the folder without a release, take the release from the renamed one."""
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "data", "2025-01-01T00:00:00Z")
    git(upstream_repo.path, "checkout", "--quiet", "--orphan", "gh-pages")
    git(upstream_repo.path, "rm", "-r", "--quiet", "--cached", ".")
    git(upstream_repo.path, "clean", "-fdq", "benchmark")
    text = liger_csv(ci_row("2025-02-01 00:00:00", "1.0"))
    upstream_repo.commit({"benchmarks/ddddddd/benchmark.csv": text}, "Add benchmark for commit ddddddd", "2025-02-01T01:00:00Z")
    git(upstream_repo.path, "mv", "benchmarks/ddddddd", "benchmarks/ddddddd-v0.8.0")
    git(upstream_repo.path, "commit", "--quiet", "-m", "Rename ddddddd to its release", date="2025-02-02T01:00:00Z")
    git(upstream_repo.path, "checkout", "--quiet", "main")
    tables = ingest(tmp_path / "warehouse", both(upstream_repo.path, tmp_path / "cache"))
    ci = tables["runs"].filter(pl.col("stream") == "ci")
    assert ci.select("benchmarked_commit", "release").rows() == [("ddddddd", "0.8.0")]
