"""Schema drift upstream: an added, reordered or missing optional column is ingested with a
warning and the new column's values kept; a missing required column rejects that snapshot
alone, its rows quarantined, the rest of the history is still ingested, and a warning names it."""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import FILE_GLOB, HEADER, liger_row
from robustness_tally import trial

from pipelines.defs.resources import Warehouse
from pipelines.defs.source.assets import raw_snapshots, upstream_source
from pipelines.defs.tables.assets import warehouse_tables
from pipelines.ingest.parse.header import Header
from pipelines.ingest.staging import drift_warnings
from pipelines.orchestration.materialize import ingest

pytest_plugins = ["robustness_report"]

DATA = "benchmark/data/all_benchmark_data.csv"
COLUMNS = HEADER.split(",")


def csv_text(columns: list[str], rows: list[dict[str, str]]) -> str:
    """A CSV with these columns in this order; each row gives a value per column by name."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([row[c] for c in columns] for row in rows)
    return buffer.getvalue()


def row(x_value: str, **extra: str) -> dict[str, str]:
    """One upstream row by column name."""
    line = liger_row(x_value=x_value, timestamp=f"2025-01-01 10:00:{int(x_value):02d}")
    return dict(zip(COLUMNS, next(csv.reader([line])))) | extra


def materialize(warehouse: Path, source: Path, tmp_path: Path) -> tuple[dg.ExecuteInProcessResult, dg.DagsterInstance]:
    resource = Warehouse(
        warehouse_dir=str(warehouse),
        source=str(source),
        branch="main",
        file_glob=FILE_GLOB,
        cache_dir=str(tmp_path / "cache"),
        baselines=["huggingface", "torch"],
    )
    instance = dg.DagsterInstance.ephemeral()
    definitions = dg.Definitions(assets=[upstream_source, raw_snapshots, warehouse_tables], resources={"warehouse": resource})
    return ingest(definitions, instance, raise_on_error=False), instance


def warnings_logged(result: dg.ExecuteInProcessResult, instance: dg.DagsterInstance) -> list[str]:
    return [e.user_message for e in instance.all_logs(result.run_id) if e.level == logging.WARNING and "schema drift" in e.user_message]


def schema_warnings(result: dg.ExecuteInProcessResult) -> list[str]:
    """Every partition's schema warnings, in history order."""
    events = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("raw_snapshots")]
    return [w for e in events for w in e.materialization.metadata["schema_warnings"].value]


def test_added_and_reordered_columns_are_ingested_with_a_warning_and_kept(upstream_repo, tmp_path):
    with trial("fault", "schema drift: column added, columns reordered"):
        upstream_repo.commit({DATA: csv_text(COLUMNS, [row("1")])}, "as upstream writes it")
        added = COLUMNS + ["cuda_version"]
        upstream_repo.commit({DATA: csv_text(added, [row("1", cuda_version="12.4"), row("2", cuda_version="12.6")])}, "a column added")
        reordered = list(reversed(added))
        upstream_repo.commit(
            {DATA: csv_text(reordered, [row("1", cuda_version="12.4"), row("2", cuda_version="12.6"), row("3", cuda_version="")])},
            "columns reordered",
        )
        warehouse = tmp_path / "warehouse"
        result, instance = materialize(warehouse, upstream_repo.path, tmp_path)

        assert result.success
        assert all(e.passed for e in result.get_asset_check_evaluations())
        runs = pl.read_parquet(warehouse / "runs.parquet").sort("x_value")
        assert runs["x_value"].to_list() == ["1", "2", "3"]
        # A run keeps the values of its first snapshot: run 1 was first seen before the column existed.
        assert [json.loads(e) if e else None for e in runs["extra_columns"]] == [
            None,
            {"cuda_version": "12.6"},
            {"cuda_version": ""},
        ]
        snapshots = pl.read_parquet(warehouse / "snapshots.parquet")
        assert snapshots["status"].to_list() == ["ingested"] * 3
        assert json.loads(snapshots["header"][2]) == reordered

        logged = warnings_logged(result, instance)
        assert sum("added column(s) cuda_version" in w for w in logged) == 2
        assert sum("another order" in w for w in logged) == 1
        assert len(schema_warnings(result)) == 3


def test_missing_required_column_rejects_that_snapshot_and_warns_without_blocking(upstream_repo, tmp_path):
    with trial("fault", "schema drift: required column missing"):
        upstream_repo.commit({DATA: csv_text(COLUMNS, [row("1")])}, "good")
        without_gpu = [c for c in COLUMNS if c != "gpu_name"]
        upstream_repo.commit({DATA: csv_text(without_gpu, [row("1"), row("2")])}, "gpu_name dropped")
        upstream_repo.commit({DATA: csv_text(COLUMNS, [row("1"), row("2"), row("3")])}, "gpu_name back")
        warehouse = tmp_path / "warehouse"
        result, _ = materialize(warehouse, upstream_repo.path, tmp_path)

        # Its rows are accounted (quarantined with the snapshot's reason): the blocking check passes, a warning names it.
        assert result.success
        [warned] = [e for e in result.get_asset_check_evaluations() if not e.passed]
        assert (warned.check_name, warned.severity) == ("no_snapshot_rejected", dg.AssetCheckSeverity.WARN)
        [(rejected_id, reason)] = warned.metadata["rejected"].value
        assert rejected_id in warned.description and "gpu_name" in warned.description

        snapshots = pl.read_parquet(warehouse / "snapshots.parquet")
        assert snapshots["status"].to_list() == ["ingested", "rejected", "ingested"]
        assert snapshots["snapshot_id"][1] == rejected_id and "gpu_name" in reason
        assert snapshots.row(1, named=True)["quarantined"] == 2
        # The rest of the history is still ingested, and the rejected rows wait in quarantine.
        assert sorted(pl.read_parquet(warehouse / "runs.parquet")["x_value"]) == ["1", "2", "3"]
        quarantine = pl.read_parquet(warehouse / "quarantine.parquet")
        assert quarantine["snapshot_id"].to_list() == [rejected_id] * 2
        assert set(quarantine["reason"]) == {reason}


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (COLUMNS, []),
        (COLUMNS + ["cuda_version", "notes"], ["upstream added column(s) cuda_version, notes"]),
        (COLUMNS[1:] + COLUMNS[:1], ["another order"]),
        ([c for c in COLUMNS if c != "liger_version"], ["optional column(s) liger_version are missing"]),
        (
            [c if c != "x_label" else "label" for c in COLUMNS],
            ["upstream added column(s) label", "optional column(s) x_label are missing"],
        ),
    ],
    ids=["as upstream", "added", "reordered", "optional missing", "optional renamed"],
)
def test_drift_warnings_name_what_changed(columns, expected):
    warnings = drift_warnings(Header(tuple(columns)))
    assert len(warnings) == len(expected)
    assert all(part in warning for part, warning in zip(expected, warnings))
