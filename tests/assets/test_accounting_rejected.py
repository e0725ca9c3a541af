"""SPEC section 5: a file rejected whole never stops the rest. A history that holds, one after another, a file of
one column, one with duplicate column names, an empty one, a binary one and one whose header's quoting is broken,
and then deletes it, builds every table, the database, the exports and the report; each rejected snapshot's lines
are quarantined with the file's reason (row_count = accepted + quarantined), the blocking check passes, a warning
names every rejected snapshot, and a check that fails names the snapshot."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import HEADER, UpstreamRepo, git, liger_csv, liger_row
from robustness_tally import trial

from pipelines.assemble import checks
from pipelines.exports import liger_csv as liger_csv_export
from pipelines.orchestration.materialize import ingest

pytest_plugins = ["robustness_report"]

DATA = "benchmark/data/all_benchmark_data.csv"
OTHER = "benchmark/data/all_benchmark_data_cutile.csv"
# Each version of OTHER, oldest first: (what it is, its bytes, its rows as lines after the first, the reason's words).
REJECTED = [
    ("one column", b"just_one\r\na\r\nb\r\n", 2, "lacks required column(s) kernel_name"),
    ("duplicate columns", (f"{HEADER},gpu_name\n{liger_row()},x\n\n{liger_row(x_value='2048')},y\n").encode(), 2, "more than once"),
    ("empty", b"", 0, "the file is empty"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00\n", 3, "not valid UTF-8"),
    ("broken header quoting", b'"kernel_name,kernel_provider\r\nrms_norm,liger\r\n', 1, "quoting is broken"),
]


def commit_bytes(repo: UpstreamRepo, files: dict[str, bytes | None], message: str, day: int) -> None:
    for name, data in files.items():
        target = repo.path / name
        if data is None:
            git(repo.path, "rm", "--quiet", name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        git(repo.path, "add", name)
    git(repo.path, "commit", "--quiet", "-m", message, date=f"2025-01-{day:02d}T00:00:00+00:00")


def load_defs(monkeypatch, warehouse: Path, source: Path, cache: Path) -> dg.Definitions:
    monkeypatch.setenv("WAREHOUSE_DIR", str(warehouse))
    monkeypatch.setenv("LIGER_SOURCE", str(source))
    monkeypatch.setenv("LIGER_CACHE_DIR", str(cache))
    from pipelines.definitions import defs

    return defs()


@pytest.mark.slow
def test_a_history_of_rejected_files_then_deleted_builds_everything(upstream_repo, tmp_path, monkeypatch):
    with trial("fault", "files rejected whole in history, then deleted"):
        good = liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1")).encode()
        commit_bytes(upstream_repo, {DATA: good, OTHER: liger_csv(liger_row(provider="cutile")).encode()}, "good files", 1)
        for day, (what, data, _, _) in enumerate(REJECTED, 2):
            commit_bytes(upstream_repo, {OTHER: data}, f"the cuTile file: {what}", day)
        commit_bytes(upstream_repo, {OTHER: None}, "the cuTile file deleted", 9)
        warehouse = tmp_path / "warehouse"
        definitions = load_defs(monkeypatch, warehouse, upstream_repo.path, tmp_path / "cache")
        with dg.DagsterInstance.ephemeral() as instance:
            result = ingest(definitions, instance, raise_on_error=False)

        assert result.success
        evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
        assert [name for name, e in evaluations.items() if not e.passed] == ["no_snapshot_rejected"]
        assert evaluations["every_row_accounted"].passed
        warning = evaluations["no_snapshot_rejected"]
        assert warning.severity == dg.AssetCheckSeverity.WARN

        snapshots = pl.read_parquet(warehouse / "snapshots.parquet").filter(pl.col("source_file") == OTHER).sort("sequence")
        rejected = snapshots.filter(pl.col("status") == "rejected")
        assert rejected.height == len(REJECTED)
        quarantine = pl.read_parquet(warehouse / "quarantine.parquet")
        for snapshot, (what, data, rows, words) in zip(rejected.iter_rows(named=True), REJECTED):
            assert snapshot["snapshot_id"] in warning.description, what
            assert words in snapshot["reason"], (what, snapshot["reason"])
            assert (snapshot["row_count"], snapshot["accepted"], snapshot["quarantined"]) == (rows, 0, rows), what
            held = quarantine.filter(pl.col("snapshot_id") == snapshot["snapshot_id"])
            assert held["row_number"].sort().to_list() == list(range(1, rows + 1)), what
            assert set(held["reason"]) <= {snapshot["reason"]}, what
            if what != "binary":  # text: it rebuilds byte for byte from its quarantined lines and its layout
                rebuilt = liger_csv_export.rebuild(warehouse, liger_csv_export.resolve_snapshot(warehouse, snapshot["snapshot_id"]))
                assert rebuilt == data and hashlib.sha256(rebuilt).hexdigest() == snapshot["content_sha256"], what

        # The rest of the history and everything downstream was built.
        runs = pl.read_parquet(warehouse / "runs.parquet")
        assert sorted(runs["provider"]) == ["cutile", "huggingface", "liger"]
        assert runs.filter(pl.col("provider") == "cutile")["in_latest"].to_list() == [False]
        assert (warehouse / "warehouse.duckdb").is_file()
        assert [p.name for p in (warehouse / "exports" / "liger_csv").glob("*.csv")] == ["all_benchmark_data.csv"]
        assert (warehouse / "exports" / "liger_csv" / "all_benchmark_data.csv").read_bytes() == good
        assert (warehouse / "report" / "index.html").is_file()


def test_a_check_that_fails_names_the_snapshot(upstream_repo, tmp_path):
    from conftest import build_warehouse

    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(x_value="2048"), liger_row(x_value="x", config="[1]"))}, "one")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    assert checks.snapshot_accounting(warehouse).passed and checks.snapshots_rejected(warehouse).passed
    [snapshot_id] = pl.read_parquet(warehouse / "snapshots.parquet")["snapshot_id"].to_list()

    # A quarantined row lost, then an accepted row's mapping lost: each time the failure names the snapshot and its counts.
    pl.read_parquet(warehouse / "quarantine.parquet").head(0).write_parquet(warehouse / "quarantine.parquet")
    outcome = checks.snapshot_accounting(warehouse)
    assert not outcome.passed and snapshot_id in outcome.description and "1 quarantined with 0 held" in outcome.description
    assert outcome.details["unaccounted"] == [snapshot_id]
    pl.read_parquet(warehouse / "run_snapshots.parquet").head(1).write_parquet(warehouse / "run_snapshots.parquet")
    outcome = checks.snapshot_accounting(warehouse)
    assert not outcome.passed and f"{snapshot_id} (3 rows, 2 accepted with 1 mapped to runs" in outcome.description
