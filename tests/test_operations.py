"""The warehouse keeps itself current: the upstream sensor and the daily schedule, on a git repository made here."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import FILE_GLOB, build_warehouse, git, liger_csv, liger_row

from pipelines.defs.resources import Warehouse
from pipelines.defs.source.schedules import daily_ingest, ingest_everything
from pipelines.defs.source.sensors import upstream_data_sensor
from pipelines.lib.source_types import SourceError
from pipelines.lib.upstream_changes import SENSOR_CACHE

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"


def warehouse_resource(path: Path, source: str, cache: Path) -> Warehouse:
    return Warehouse(
        warehouse_dir=str(path),
        source=source,
        branch="main",
        file_glob=FILE_GLOB,
        cache_dir=str(cache),
        baselines=["huggingface", "torch"],
    )


@pytest.fixture
def setup(upstream_repo, tmp_path):
    """An upstream with one data commit, ingested into a warehouse."""
    upstream_repo.commit({DATA: liger_csv(liger_row()), "README.md": "bench\n"}, "first data")
    warehouse = warehouse_resource(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    build_warehouse(warehouse.path, warehouse.source, Path(warehouse.cache_dir))
    return upstream_repo, warehouse


def tick(warehouse: Warehouse, cursor: str | None, instance: dg.DagsterInstance) -> dg.SensorResult:
    context = dg.build_sensor_context(cursor=cursor, instance=instance, resources={"warehouse": warehouse})
    return upstream_data_sensor(context)


def head(repo) -> str:
    return git(repo.path, "rev-parse", "HEAD")


def run_request(warehouse: Warehouse, request: dg.RunRequest, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """Execute what the sensor asked for: the job it targets, with the test's warehouse."""
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    from pipelines.definitions import defs

    # Definitions load against the defs state of the instance they run on, as in a code server, not whatever
    # instance was made last in this process (an instance disposed since leaves a dead reference behind).
    with set_defs_state_storage(instance.defs_state_storage):
        loaded = defs()
        definitions = dg.Definitions(
            assets=loaded.assets,
            asset_checks=loaded.asset_checks,
            jobs=[ingest_everything],
            resources={"warehouse": warehouse},
        )
        job = definitions.resolve_job_def(upstream_data_sensor.job_name)
    return job.execute_in_process(instance=instance, tags=request.tags, run_config=request.run_config)


def test_unchanged_head_asks_for_no_run_and_costs_only_ls_remote(setup):
    repo, warehouse = setup
    with dg.DagsterInstance.ephemeral() as instance:
        result = tick(warehouse, head(repo), instance)
    assert not result.run_requests
    assert result.cursor == head(repo)
    assert "unchanged" in result.skip_reason.skip_message
    # The head did not move, so the sensor never cloned or fetched anything.
    assert not (Path(warehouse.cache_dir) / SENSOR_CACHE).exists()


def test_first_tick_on_an_up_to_date_warehouse_only_records_the_head(setup, instance_kind_home):
    repo, warehouse = setup
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        result = tick(warehouse, None, instance)
    assert not result.run_requests
    assert result.cursor == head(repo)


@pytest.mark.slow
def test_new_data_commit_starts_one_run_and_its_runs_appear(setup, instance_kind_home):
    repo, warehouse = setup
    before = head(repo)
    new = repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", timestamp="2025-02-01 00:00:00"))}, "new runs")
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        result = tick(warehouse, before, instance)
        assert len(result.run_requests) == 1
        [request] = result.run_requests
        assert result.cursor == new and request.run_key == new
        assert request.tags["upstream/new_snapshots"] == "1"

        executed = run_request(warehouse, request, instance)
        assert executed.success
        runs = pl.read_parquet(warehouse.path / "runs.parquet")
        assert set(runs["provider"]) == {"liger", "huggingface"}
        assert executed.dagster_run.tags["upstream/head"] == new

        after = tick(warehouse, result.cursor, instance)
    assert not after.run_requests and after.cursor == new


def test_commit_touching_no_data_file_starts_no_run_but_moves_the_cursor(setup):
    repo, warehouse = setup
    before = head(repo)
    new = repo.commit({"README.md": "bench, documented\n", "benchmark/scripts/utils.py": "# harness\n"}, "docs only")
    with dg.DagsterInstance.ephemeral() as instance:
        result = tick(warehouse, before, instance)
    assert not result.run_requests
    assert result.cursor == new
    assert "without changing a data file" in result.skip_reason.skip_message


def test_new_data_file_and_deleted_data_file_each_start_a_run(setup, instance_kind_home):
    repo, warehouse = setup
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        added = repo.commit({CUTILE: liger_csv(liger_row(provider="cutile"))}, "cutile results")
        result = tick(warehouse, None, instance)
        assert [r.run_key for r in result.run_requests] == [added]
        build_warehouse(warehouse.path, warehouse.source, Path(warehouse.cache_dir))
        git(repo.path, "rm", "--quiet", CUTILE)
        git(repo.path, "commit", "--quiet", "-m", "drop cutile")
        deleted = head(repo)
        # No new snapshot, but the files at head changed: `in_latest` must be recomputed.
        result = tick(warehouse, added, instance)
    assert [r.run_key for r in result.run_requests] == [deleted]


def test_empty_warehouse_asks_for_a_run(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "data")
    warehouse = warehouse_resource(tmp_path / "empty", str(upstream_repo.path), tmp_path / "cache")
    with dg.DagsterInstance.ephemeral() as instance:
        result = tick(warehouse, None, instance)
    assert len(result.run_requests) == 1


@pytest.mark.slow
def test_unreachable_source_fails_the_tick_with_an_actionable_message(tmp_path):
    warehouse = warehouse_resource(tmp_path / "w", f"file://{tmp_path}/no-such-repo.git", tmp_path / "cache")
    with dg.DagsterInstance.ephemeral() as instance, pytest.raises(SourceError, match="LIGER_SOURCE"):
        tick(warehouse, None, instance)


def test_sensor_and_schedule_are_on_by_default_and_target_every_asset():
    from pipelines.definitions import defs

    definitions = defs()
    assert upstream_data_sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert upstream_data_sensor.minimum_interval_seconds == 3600
    assert daily_ingest.default_status == dg.DefaultScheduleStatus.RUNNING
    assert daily_ingest.cron_schedule == "0 6 * * *" and daily_ingest.execution_timezone == "UTC"
    job = definitions.resolve_job_def("ingest_everything")
    assert daily_ingest.job_name == upstream_data_sensor.job_name == job.name
    every_asset = {k for k in definitions.resolve_asset_graph().get_all_asset_keys()}
    assert job.asset_layer.selected_asset_keys == every_asset
    checks = definitions.resolve_asset_graph().asset_check_keys
    assert checks and checks <= set(job.asset_layer.asset_graph.asset_check_keys)


def test_schedule_requests_the_whole_job_at_six_utc():
    when = datetime(2026, 3, 1, 6, 0, tzinfo=UTC)
    with dg.DagsterInstance.ephemeral() as instance:
        context = dg.build_schedule_context(instance=instance, scheduled_execution_time=when)
        [request] = daily_ingest.evaluate_tick(context).run_requests
    assert request.asset_selection is None and request.job_name in (None, "ingest_everything")


@pytest.mark.slow
def test_daily_runs_ingest_then_change_nothing(upstream_repo, tmp_path, instance_kind_home):
    """Two scheduled days executed on a persistent instance of each kind: the second, with nothing new upstream, rewrites nothing."""
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface"))}, "data")
    warehouse = warehouse_resource(tmp_path / "w", str(upstream_repo.path), tmp_path / "cache")
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        executed = []
        for day in (1, 2):
            context = dg.build_schedule_context(instance=instance, scheduled_execution_time=datetime(2026, 3, day, 6, 0, tzinfo=UTC))
            [request] = daily_ingest.evaluate_tick(context).run_requests
            executed.append(run_request(warehouse, request, instance))
            if day == 1:
                tables = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in warehouse.path.glob("*.parquet")}
        assert [r.dagster_run.status for r in instance.get_run_records()] == [dg.DagsterRunStatus.SUCCESS] * 2
    assert all(result.success for result in executed)
    assert pl.read_parquet(warehouse.path / "runs.parquet").height == 2
    [runs] = [e for e in executed[1].get_asset_materialization_events() if e.asset_key == dg.AssetKey("runs")]
    assert runs.materialization.metadata["rewritten"].value is False
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in warehouse.path.glob("*.parquet")} == tables


def test_failing_blocking_check_stops_everything_downstream(upstream_repo, tmp_path, monkeypatch):
    # p20 above the median is not a parse error, so the row is accepted and the contract check must catch it.
    upstream_repo.commit({DATA: liger_csv(liger_row(y50="0.5", y20="0.7", y80="0.6"))}, "bad quantiles")
    for name, value in {"WAREHOUSE_DIR": tmp_path / "w", "LIGER_SOURCE": upstream_repo.path, "LIGER_CACHE_DIR": tmp_path / "c"}.items():
        monkeypatch.setenv(name, str(value))
    from pipelines.definitions import defs

    job = defs().resolve_job_def("ingest_everything")
    with dg.DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    failed = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
    assert failed == {"quantiles_ordered"}
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert "runs" in materialized
    assert not materialized & {"comparable_groups", "resource_documents"}
    assert not (tmp_path / "w" / "warehouse.duckdb").exists()
