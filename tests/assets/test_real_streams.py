"""Both real streams of upstream (the upstream bundle: `main`'s benchmark/data/ and `gh-pages`' CI history), ingested
once: the facts its README counts, the accounting, and every snapshot rebuilt byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

from pipelines.core import settings
from pipelines.exports import liger_csv
from pipelines.ingest.source.configured import git_streams

pytestmark = pytest.mark.slow


def read(warehouse: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(warehouse / f"{name}.parquet")


def test_both_streams_hold_every_run_and_every_distinct_file_version(upstream_warehouse: Path):
    snapshots, runs = read(upstream_warehouse, "snapshots"), read(upstream_warehouse, "runs")
    # The data README: main 40 snapshots and 48,173 rows; gh-pages 43 distinct file versions and 89,060 rows.
    by_stream = snapshots.group_by("stream").agg(pl.len(), pl.col("row_count").sum()).sort("stream").rows()
    assert by_stream == [("ci", 43, 89_060), ("data", 40, 48_173)]
    # 4,421 runs in main, 87,256 in gh-pages, 1,470 of them in both.
    assert runs.height == 4_421 + 87_256 - 1_470
    assert runs.filter(pl.col("stream") == "data").height == 4_421
    assert runs.filter(pl.col("benchmarked_commit").is_not_null()).height == 87_256
    assert (snapshots["row_count"] == snapshots["accepted"] + snapshots["quarantined"]).all()
    assert snapshots["on_branch"].all() and runs["on_branch"].all()
    # 35 folders at the newest gh-pages commit, three files in main's.
    assert snapshots.filter(pl.col("is_latest")).group_by("stream").len().sort("stream").rows() == [("ci", 35), ("data", 3)]
    # 0701bab was benchmarked four times over (an H200, later an H100): four distinct contents of one folder.
    assert snapshots.filter(pl.col("benchmarked_commit") == "0701bab").height == 4
    releases = set(snapshots["release"].drop_nulls())
    assert {"0.6.4", "0.7.0"} <= releases
    assert set(runs.filter(pl.col("stream") == "ci")["backend"]) == {"triton"}
    assert set(runs["backend"]) == {"triton", "cutile", "cutedsl"}


def test_the_catalogs_know_every_gpu_and_kernel_of_both_streams(upstream_warehouse: Path):
    """catalogs_cover_data green on the real history; a kernel name's parameter (`dyt_beta=False`) is in the workload."""
    from pipelines.assemble import checks

    outcome = checks.catalog_coverage(upstream_warehouse)
    assert outcome.passed, outcome.description
    runs = read(upstream_warehouse, "runs")
    assert runs.filter(pl.col("kernel").str.contains("=", literal=True)).is_empty()
    beta = runs.filter(pl.col("raw_kernel").str.starts_with("dyt_beta="))
    assert beta.height and set(beta["kernel"]) == {"dyt"}
    assert set(beta["workload"].str.json_path_match("$.beta")) == {"true", "false"}
    assert read(upstream_warehouse, "environments")["known"].all()


def test_every_snapshot_of_both_streams_rebuilds_to_its_content_sha256(upstream_warehouse: Path):
    snapshots = read(upstream_warehouse, "snapshots")
    differing = []
    for snapshot_id, content_sha256 in snapshots.select("snapshot_id", "content_sha256").iter_rows():
        rebuilt = liger_csv.rebuild(upstream_warehouse, liger_csv.resolve_snapshot(upstream_warehouse, snapshot_id))
        if hashlib.sha256(rebuilt).hexdigest() != content_sha256:
            differing.append(snapshot_id)
    assert not differing, f"{len(differing)} snapshot(s) do not rebuild byte for byte: {', '.join(differing[:5])}"


def test_the_default_source_reads_both_streams_of_upstream():
    current = settings.read({})
    assert current.source == settings.DEFAULT_SOURCE and current.streams == ("data", "ci")
    streams = [(s.name, s.source, s.branch, s.file_glob) for s in git_streams(current)]
    assert streams == [
        ("data", settings.DEFAULT_SOURCE, "main", "benchmark/data/all_benchmark_data*.csv"),
        ("ci", settings.DEFAULT_SOURCE, "gh-pages", "benchmarks/*/benchmark.csv"),
    ]


def test_materialize_holds_both_streams_and_a_no_change_run_writes_nothing(upstream_bundle: Path, tmp_path: Path, monkeypatch):
    import dagster as dg
    from test_materialize import NOTHING_CHANGED, exported_files, load_defs, materialized, metadata_of, staged

    from pipelines.orchestration.materialize import ingest

    warehouse = tmp_path / "warehouse"
    for name in ("LIGER_STREAMS", "LIGER_CI_SOURCE", "LIGER_CI_BRANCH", "LIGER_CI_FILE_GLOB", "LIGER_BRANCH", "LIGER_FILE_GLOB"):
        monkeypatch.delenv(name, raising=False)
    definitions = load_defs(monkeypatch, warehouse, upstream_bundle, tmp_path / "cache")
    with dg.DagsterInstance.ephemeral() as instance:
        result = ingest(definitions, instance)
        assert result.success
        partitions = staged(result)
        assert len(partitions) == 83 and len(instance.get_dynamic_partitions("snapshots")) == 83
        release = next(m for m in partitions.values() if m["release"].value == "0.7.0")
        assert release["stream"].value == "ci" and release["benchmarked_commit"].value == "7644a0f"
        assert metadata_of(result, "runs")["dagster/row_count"].value == 90_207
        database = (warehouse / "warehouse.duckdb").stat()
        exported = exported_files(warehouse)

        again = ingest(definitions, instance)
        assert again.success and staged(again) == {}
        assert materialized(again) == NOTHING_CHANGED
        assert ((warehouse / "warehouse.duckdb").stat().st_ino, (warehouse / "warehouse.duckdb").stat().st_mtime_ns) == (
            database.st_ino,
            database.st_mtime_ns,
        )
        assert exported_files(warehouse) == exported
