"""CSV sources (a local file, an http URL) materialized end to end through Dagster, as git sources are."""

import polars as pl
import pytest
from conftest import liger_csv, liger_row
from local_http import serving_file
from test_materialize import load_defs, materialize_everything, metadata_of


def materialize_twice_then_change(definitions, csv_path, warehouse):
    first = materialize_everything(definitions)
    assert first.success
    assert metadata_of(first, "raw_snapshots")["snapshots_parsed"].value == 1
    assert pl.read_parquet(warehouse / "runs.parquet").height == 1
    again = materialize_everything(definitions)
    assert again.success
    assert metadata_of(again, "raw_snapshots")["snapshots_parsed"].value == 0
    assert metadata_of(again, "runs")["rewritten"].value is False
    # New content is a new snapshot: its first materialization succeeds too.
    csv_path.write_text(liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1")))
    changed = materialize_everything(definitions)
    assert changed.success
    assert metadata_of(changed, "raw_snapshots")["snapshots_parsed"].value == 1
    runs = pl.read_parquet(warehouse / "runs.parquet")
    assert runs.height == 2 and runs["in_latest"].sum() == 2


@pytest.mark.parametrize("served", [False, True], ids=["file", "url"])
def test_a_csv_source_materializes_first_and_on_no_change(served, tmp_path, monkeypatch):
    csv_path = tmp_path / "mine" / "all_benchmark_data.csv"
    csv_path.parent.mkdir()
    csv_path.write_text(liger_csv(liger_row()))
    warehouse = tmp_path / "warehouse"
    if not served:
        materialize_twice_then_change(load_defs(monkeypatch, warehouse, csv_path, tmp_path / "cache"), csv_path, warehouse)
        return
    with serving_file(csv_path) as base:
        definitions = load_defs(monkeypatch, warehouse, f"{base}/all_benchmark_data.csv", tmp_path / "cache")
        materialize_twice_then_change(definitions, csv_path, warehouse)


def test_the_sensor_asks_for_a_csv_source_with_tags_dagster_accepts(tmp_path):
    import dagster as dg
    from dagster._utils.tags import normalize_tags
    from test_operations import run_request, tick, warehouse_resource

    csv_path = tmp_path / "all_benchmark_data.csv"
    csv_path.write_text(liger_csv(liger_row()))
    warehouse = warehouse_resource(tmp_path / "warehouse", str(csv_path), tmp_path / "cache")
    with dg.DagsterInstance.ephemeral() as instance:
        [request] = tick(warehouse, None, instance).run_requests
        normalize_tags({**request.tags, "dagster/run_key": request.run_key}, strict=True)  # raises on a value Dagster refuses
        assert run_request(warehouse, request, instance).success
