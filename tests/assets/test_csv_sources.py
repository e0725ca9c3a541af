"""CSV sources (a local file, an http URL) materialized end to end through Dagster, as git sources are."""

import os
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import liger_csv, liger_row
from local_http import serving_file
from test_materialize import NOTHING_CHANGED, load_defs, materialize_everything, materialized, staged

from pipelines.core import settings
from pipelines.orchestration.materialize import ingest


def materialize_twice_then_change(definitions, csv_path, warehouse):
    with dg.instance_for_test() as instance:
        ingest_twice_then_change(definitions, instance, csv_path, warehouse)


def ingest_twice_then_change(definitions, instance, csv_path, warehouse):
    first = materialize_everything(definitions, instance)
    assert first.success
    assert len(staged(first)) == 1
    assert pl.read_parquet(warehouse / "runs.parquet").height == 1
    again = materialize_everything(definitions, instance)
    assert again.success
    assert staged(again) == {}
    assert materialized(again) == NOTHING_CHANGED
    # New content is a new snapshot: its first materialization succeeds too.
    csv_path.write_text(liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1")))
    changed = materialize_everything(definitions, instance)
    assert changed.success
    assert len(staged(changed)) == 1
    runs = pl.read_parquet(warehouse / "runs.parquet")
    assert runs.height == 2 and runs["in_latest"].sum() == 2


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_relative_liger_source_is_taken_from_where_the_command_runs(upstream_repo, tmp_path):
    from test_materialize import DATA, run_cli

    dagster_home = tmp_path / "dagster-home"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_bytes((settings.PROJECT_ROOT / "dagster.yaml").read_bytes())

    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    elsewhere = tmp_path / "some" / "folder"  # not DAGSTER_HOME: the command stays here
    elsewhere.mkdir(parents=True)
    env = {
        "DAGSTER_HOME": str(dagster_home),
        "WAREHOUSE_DIR": str(tmp_path / "w"),
        "LIGER_CACHE_DIR": str(tmp_path / "c"),
        "LIGER_SOURCE": "../../upstream",
    }
    result = run_cli(["materialize"], env, elsewhere)
    assert result.returncode == 0, result.stderr[-3000:]
    assert pl.read_parquet(tmp_path / "w" / "runs.parquet").height == 1
    # The command stayed in `elsewhere`: the instance's relative storage paths were taken from DAGSTER_HOME.
    assert (dagster_home / "data" / "dagster" / "storage").is_dir()
    assert not any(elsewhere.iterdir())


def test_bootstrap_runs_the_command_where_the_user_is_with_the_environment_untouched(tmp_path, monkeypatch):
    from pipelines import bootstrap

    seen = {}
    monkeypatch.setattr(bootstrap, "ensure_venv", lambda: tmp_path / "python")
    monkeypatch.setattr(
        bootstrap.subprocess,
        "run",
        lambda command, **kw: seen.update(kw, source=os.environ["LIGER_SOURCE"], cwd_now=Path.cwd()) or type("R", (), {"returncode": 0}),
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LIGER_SOURCE", "data/mine.csv")
    assert bootstrap.main(["materialize"]) == 0
    # The child resolves the relative source against this folder itself (settings.read): nothing is rewritten for it.
    assert seen == {"source": "data/mine.csv", "cwd_now": tmp_path}


@pytest.mark.parametrize(
    "value", ["https://github.com/linkedin/Liger-Kernel.git", "git@example.invalid:org/x.git", "file:///x", "/abs/x.csv", "~/x.csv", ""]
)
def test_only_a_relative_local_liger_source_is_made_absolute(value, tmp_path):
    from pipelines.core.settings import absolute_source

    assert absolute_source(value, tmp_path) == value


@pytest.mark.slow
def test_a_url_source_is_read_once_per_run_and_a_stalled_one_fails_within_one_deadline(tmp_path, monkeypatch):
    import threading

    from local_http import send_bytes, serving

    from pipelines.ingest.source import csv_source as source_csv

    body = liger_csv(liger_row()).encode()
    gets: list[str] = []
    stall, released = threading.Event(), threading.Event()

    def respond(handler):
        gets.append(handler.path)
        if stall.is_set():
            released.wait(30)  # released when the test ends; the deadline below is far shorter
            return
        send_bytes(handler, body)

    with serving(respond) as base:
        definitions = load_defs(monkeypatch, tmp_path / "warehouse", f"{base}/all_benchmark_data.csv", tmp_path / "cache")
        with dg.instance_for_test() as instance:
            assert materialize_everything(definitions, instance).success
            assert len(gets) == 1, "the command's listing and upstream_source each read the source"
            monkeypatch.setattr(source_csv, "DOWNLOAD_DEADLINE_SECONDS", 2)
            stall.set()
            failed = ingest(definitions, instance, raise_on_error=False)
            released.set()
        assert not failed.success and len(gets) == 2
        [failure] = [e for e in failed.all_events if e.event_type_value == "STEP_FAILURE"]
        assert "did not finish within 2 s" in str(failure.step_failure_data.error.cause)


def test_a_csv_file_appended_to_then_edited_keeps_its_first_values_and_order(tmp_path):
    """SPEC section 2: a plain CSV's contents are snapshots in the order ingested, none a rewrite of the one before:
    appended rows are new runs; a value edited later is a conflict against the first, which stays."""
    from conftest import build_warehouse

    from pipelines.assemble.tables_build import build_tables
    from pipelines.core.settings import for_source
    from pipelines.ingest.steps import stage_new, sync
    from pipelines.storage import store

    csv_path, warehouse, cache = tmp_path / "all_benchmark_data.csv", tmp_path / "warehouse", tmp_path / "cache"
    first, second = liger_row(timestamp="2025-01-01 10:00:00"), liger_row(provider="torch", timestamp="2025-01-02 10:00:00", y50="0.9")
    csv_path.write_text(liger_csv(first))
    build_warehouse(warehouse, str(csv_path), cache)
    csv_path.write_text(liger_csv(first, second))  # appended
    build_warehouse(warehouse, str(csv_path), cache)
    csv_path.write_text(liger_csv(liger_row(timestamp="2025-01-01 10:00:00", y50="0.55"), second))  # the first value edited
    source = for_source(str(csv_path), cache_dir=cache)
    with store.writer_lock(warehouse):
        listing = sync(warehouse, source)
        stage_new(warehouse, source, listing)
        report = build_tables(warehouse, listing)
    assert report.moved is None  # no "no longer on their branch": a new content is no rewrite
    snapshots = pl.read_parquet(warehouse / "snapshots.parquet").sort("sequence", maintain_order=True)
    runs = pl.read_parquet(warehouse / "runs.parquet").sort("observed_at")
    assert snapshots["on_branch"].all() and snapshots["is_latest"].to_list() == [False, False, True]
    ingested_order = snapshots["snapshot_id"].to_list()
    assert runs["first_seen_snapshot"].to_list() == ingested_order[:2]  # each run first seen where it first appeared
    assert runs["raw_p50"].to_list() == [0.5, 0.9]  # the first value stays
    quarantine = pl.read_parquet(warehouse / "quarantine.parquet")
    assert quarantine["snapshot_id"].to_list() == [ingested_order[2]]
