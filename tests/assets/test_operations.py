"""The warehouse keeps itself current: the upstream sensor and the daily schedule, on a git repository made here."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import FILE_GLOB, build_warehouse, git, liger_csv, liger_row
from dagster._core.storage.defs_state.base import DefsStateStorage

from pipelines.assemble import checks
from pipelines.assemble import tables_build as build
from pipelines.core.settings import DEFAULT_SENSOR_INTERVAL_S, read
from pipelines.defs.resources import Warehouse, built_from
from pipelines.defs.source.schedules import daily_ingest, ingest_everything
from pipelines.defs.source.sensors import upstream_data_sensor_every
from pipelines.ingest.source.upstream_changes import SENSOR_CACHE
from pipelines.orchestration.materialize import ingest
from pipelines.orchestration.sensor_cursor import SensorCursor

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"

upstream_data_sensor = upstream_data_sensor_every(DEFAULT_SENSOR_INTERVAL_S)


@pytest.fixture(autouse=True)
def closes_every_instance_it_opens():
    """A tick's context opens its own instance by reference. Left open, the instance closes whenever the garbage
    collector gets to it, and its exit makes a finished test's instance Dagster's current defs state again: a
    definitions load, often in another test, then failed with "unable to open database file"."""
    yield
    gc.collect()
    assert DefsStateStorage.get() is None, "an instance opened in this test was left to the garbage collector"


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
    """An upstream with one data commit, and a warehouse to ingest it into."""
    upstream_repo.commit({DATA: liger_csv(liger_row()), "README.md": "bench\n"}, "first data")
    warehouse = warehouse_resource(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    return upstream_repo, warehouse


_LOADED: dict[tuple[int, int], tuple[Warehouse, dg.DagsterInstance, dg.Definitions]] = {}


def definitions_for(warehouse: Warehouse, instance: dg.DagsterInstance) -> dg.Definitions:
    """The code location's definitions with the test's warehouse, as a code server loads them: once per
    instance (a schedule's context opens instances of its own, which loading again would bind to)."""
    key = (id(warehouse), id(instance))
    if key not in _LOADED:
        _LOADED[key] = (warehouse, instance, _load(warehouse, instance))
    return _LOADED[key][2]


def _load(warehouse: Warehouse, instance: dg.DagsterInstance) -> dg.Definitions:
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
            schedules=[daily_ingest],
            sensors=[upstream_data_sensor],
            resources={"warehouse": warehouse},
        )
        definitions.get_repository_def()  # built (and kept) here, against this instance's defs state
        return definitions


def ingested(warehouse: Warehouse, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """The warehouse brought up to upstream through Dagster, as `python -m pipelines materialize` does."""
    result = ingest(definitions_for(warehouse, instance), instance)
    assert result.success
    return result


def tick(warehouse: Warehouse, cursor: str | None, instance: dg.DagsterInstance) -> dg.SensorResult:
    # Closed here, not by the garbage collector (see closes_every_instance_it_opens).
    with dg.build_sensor_context(
        cursor=cursor,
        instance=instance,
        resources={"warehouse": warehouse},
        repository_def=definitions_for(warehouse, instance).get_repository_def(),
    ) as context:
        result = upstream_data_sensor(context)
    # What the daemon does with a tick's result before it launches the runs it asks for.
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def scheduled(warehouse: Warehouse, instance: dg.DagsterInstance, day: int) -> dg.RunRequest:
    with dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=datetime(2026, 3, day, 6, 0, tzinfo=UTC),
        resources={"warehouse": warehouse},
        repository_def=definitions_for(warehouse, instance).get_repository_def(),
    ) as context:
        [request] = daily_ingest.evaluate_tick(context).run_requests
    return request


def head(repo) -> str:
    return git(repo.path, "rev-parse", "HEAD")


def run_request(warehouse: Warehouse, request: dg.RunRequest, instance: dg.DagsterInstance, **execute) -> dg.ExecuteInProcessResult:
    """Execute what the sensor or schedule asked for: the job it targets, its partitions and assets, with the test's warehouse."""
    job = definitions_for(warehouse, instance).resolve_job_def(upstream_data_sensor.job_name)
    return job.execute_in_process(
        instance=instance,
        tags=request.tags,
        run_config=request.run_config,
        partition_key=request.partition_key,
        asset_selection=request.asset_selection,
        **execute,
    )


def partitions_staged(result: dg.ExecuteInProcessResult) -> list[str]:
    return [e.partition for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("raw_snapshots")]


def snapshot_id(repo, path: str = DATA) -> str:
    return f"{head(repo)[:12]}/{Path(path).name}"


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
        ingested(warehouse, instance)
        result = tick(warehouse, None, instance)
    assert not result.run_requests
    assert result.cursor == head(repo)
    assert result.skip_reason.skip_message == f"upstream head {head(repo)[:12]}: the warehouse holds every data file of it already"


def test_a_warehouse_staged_outside_this_instance_is_staged_again_as_partitions(setup):
    """Dagster's record says which partitions are in: snapshots staged by the library alone (another
    instance, an older version of the project) are staged again, so that the UI shows every partition."""
    repo, warehouse = setup
    build_warehouse(warehouse.path, warehouse.source, Path(warehouse.cache_dir))
    with dg.DagsterInstance.ephemeral() as instance:
        [request] = tick(warehouse, None, instance).run_requests
        assert request.partition_key == snapshot_id(repo)
        assert instance.get_dynamic_partitions("snapshots") == [snapshot_id(repo)]


@pytest.mark.slow
def test_new_data_commit_adds_one_partition_and_one_run_that_stages_only_it(setup, instance_kind_home):
    repo, warehouse = setup
    before = head(repo)
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        ingested(warehouse, instance)
        staged_before = {p.name: p.stat().st_mtime_ns for p in (warehouse.path / "_staging").iterdir()}
        new = repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", timestamp="2025-02-01 00:00:00"))}, "new runs")
        result = tick(warehouse, before, instance)
        assert len(result.run_requests) == 1
        [request] = result.run_requests
        # The cursor moves past the new head only once its run succeeded.
        pending = SensorCursor.parse(result.cursor)
        assert pending.head == before and pending.pending.head == new and request.run_key == new
        assert "has not finished" in tick(warehouse, result.cursor, instance).skip_reason.skip_message
        assert request.tags["upstream/new_snapshots"] == "1"
        assert request.partition_key == snapshot_id(repo) and request.asset_selection is None
        assert instance.get_dynamic_partitions("snapshots") == [f"{before[:12]}/all_benchmark_data.csv", snapshot_id(repo)]

        executed = run_request(warehouse, request, instance)
        assert executed.success
        assert partitions_staged(executed) == [snapshot_id(repo)]
        # The partition staged before is not read or written again.
        assert {p.name: p.stat().st_mtime_ns for p in (warehouse.path / "_staging").iterdir() if p.name in staged_before} == staged_before
        runs = pl.read_parquet(warehouse.path / "runs.parquet")
        assert set(runs["provider"]) == {"liger", "huggingface"}
        assert executed.dagster_run.tags["upstream/head"] == new
        assert len(instance.get_materialized_partitions(dg.AssetKey("raw_snapshots"))) == 2

        after = tick(warehouse, result.cursor, instance)
    assert not after.run_requests and after.cursor == new


@pytest.mark.slow
def test_a_failed_sensor_run_is_asked_for_again_after_a_backoff_and_the_cursor_waits_for_success(setup, monkeypatch):
    repo, warehouse = setup
    with dg.DagsterInstance.ephemeral() as instance:
        ingested(warehouse, instance)
        before = head(repo)
        new = repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", timestamp="2025-02-01 00:00:00"))}, "new runs")
        first = tick(warehouse, before, instance)
        [request] = first.run_requests
        broken = checks.CheckOutcome(False, "broken on purpose")
        with monkeypatch.context() as patched:
            patched.setattr(
                build, "CHECKS", tuple((t, n, (lambda _: broken) if n == "run_id_unique" else f, b) for t, n, f, b in build.CHECKS)
            )
            assert not run_request(warehouse, request, instance, raise_on_error=False).success
        waiting = tick(warehouse, first.cursor, instance)
        assert not waiting.run_requests and "failed; asking again after" in waiting.skip_reason.skip_message
        assert SensorCursor.parse(waiting.cursor).head == before, "the cursor moved past a head whose run failed"
        # Once the backoff (the sensor's interval for a first retry) has passed, the same head is asked for again.
        pending = SensorCursor.parse(first.cursor).pending
        monkeypatch.setattr("time.time", lambda: pending.retry_at(3600) + 1)
        retry = tick(warehouse, waiting.cursor, instance)
        [again] = retry.run_requests
        assert again.run_key == f"{new}-retry-1" and again.tags["upstream/attempt"] == "1"
        assert run_request(warehouse, again, instance).success
        done = tick(warehouse, retry.cursor, instance)
    assert not done.run_requests and done.cursor == new
    assert set(pl.read_parquet(warehouse.path / "runs.parquet")["provider"]) == {"liger", "huggingface"}


def test_commit_touching_no_data_file_starts_no_run_but_moves_the_cursor(setup):
    repo, warehouse = setup
    with dg.DagsterInstance.ephemeral() as instance:
        ingested(warehouse, instance)
        before = head(repo)
        new = repo.commit({"README.md": "bench, documented\n", "benchmark/scripts/utils.py": "# harness\n"}, "docs only")
        result = tick(warehouse, before, instance)
    assert not result.run_requests
    assert result.cursor == new
    assert "without changing a data file" in result.skip_reason.skip_message


def test_new_data_file_and_deleted_data_file_each_start_a_run(setup, instance_kind_home):
    repo, warehouse = setup
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        ingested(warehouse, instance)
        added = repo.commit({CUTILE: liger_csv(liger_row(provider="cutile"))}, "cutile results")
        result = tick(warehouse, None, instance)
        assert [(r.run_key, r.partition_key) for r in result.run_requests] == [(added, snapshot_id(repo, CUTILE))]
        assert run_request(warehouse, result.run_requests[0], instance).success
        git(repo.path, "rm", "--quiet", CUTILE)
        git(repo.path, "commit", "--quiet", "-m", "drop cutile")
        deleted = head(repo)
        # No new snapshot, but the files at head changed: `in_latest` must be recomputed, without staging anything.
        result = tick(warehouse, added, instance)
        [request] = result.run_requests
        assert request.run_key == deleted and request.partition_key is None
        assert dg.AssetKey("raw_snapshots") not in request.asset_selection and dg.AssetKey("runs") in request.asset_selection
        assert run_request(warehouse, request, instance).success
    assert pl.read_parquet(warehouse.path / "runs.parquet").filter(pl.col("provider") == "cutile")["in_latest"].to_list() == [False]


def test_empty_warehouse_asks_for_a_run(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "data")
    warehouse = warehouse_resource(tmp_path / "empty", str(upstream_repo.path), tmp_path / "cache")
    with dg.DagsterInstance.ephemeral() as instance:
        result = tick(warehouse, None, instance)
    assert len(result.run_requests) == 1


def test_unreachable_source_skips_the_tick_with_one_line_naming_it(tmp_path, monkeypatch):
    """Offline, a tick is skipped with the reason in one line, the cursor kept; it never fails with a stack."""
    monkeypatch.setattr("pipelines.ingest.source.retry.BACKOFF_SECONDS", 0.01)
    source = f"file://{tmp_path}/no-such-repo.git"
    warehouse = warehouse_resource(tmp_path / "w", source, tmp_path / "cache")
    cursor = SensorCursor("a" * 40).dump()
    with dg.DagsterInstance.ephemeral() as instance:
        result = tick(warehouse, cursor, instance)
    assert not result.run_requests and result.cursor == cursor
    assert result.skip_reason.skip_message.startswith(f"cannot ask the source {source}: ")
    assert "LIGER_SOURCE" in result.skip_reason.skip_message and "\n" not in result.skip_reason.skip_message


def test_a_warehouse_of_another_source_skips_the_tick_naming_both(setup, tmp_path):
    """The UI started with another LIGER_SOURCE than the warehouse's: each tick says so in one line."""
    repo, warehouse = setup
    with dg.DagsterInstance.ephemeral() as instance:
        ingested(warehouse, instance)
        other = warehouse_resource(warehouse.path, str(tmp_path / "elsewhere.git"), tmp_path / "cache")
        result = tick(other, None, instance)
    assert not result.run_requests
    message = result.skip_reason.skip_message
    assert str(repo.path) in message and "elsewhere.git" in message and "\n" not in message


def test_definitions_started_without_liger_source_read_the_warehouses_own(setup, tmp_path):
    """`dg dev` with LIGER_SOURCE (and LIGER_STREAMS) unset reads what the warehouse was built from (a bundle, offline);
    a setting given wins, and a new warehouse reads upstream."""
    repo, warehouse = setup
    env = {"WAREHOUSE_DIR": str(warehouse.path)}
    assert built_from(read(env), env).source == read({}).source  # nothing built yet: upstream
    with dg.DagsterInstance.ephemeral() as instance:
        ingested(warehouse, instance)
    assert built_from(read(env), env).source == str(repo.path)
    data_only = {**env, "LIGER_STREAMS": "data"}
    assert built_from(read(data_only), data_only).streams == ("data",)
    given = {**env, "LIGER_SOURCE": str(tmp_path / "other.git")}
    assert built_from(read(given), given).source == str(tmp_path / "other.git")


def test_sensor_and_schedule_are_on_by_default_and_target_every_asset():
    from pipelines.definitions import defs

    definitions = defs()
    upstream_data_sensor = next(s for s in definitions.sensors if s.name == "upstream_data_sensor")
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


def test_schedule_registers_new_snapshots_and_asks_for_one_run_staging_them(setup):
    repo, warehouse = setup
    first = snapshot_id(repo)
    repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch"))}, "second data")
    with dg.instance_for_test() as instance:  # a schedule's context opens its instance by reference
        request = scheduled(warehouse, instance, 1)
        assert instance.get_dynamic_partitions("snapshots") == [first, snapshot_id(repo)]
    assert request.partition_key is None and request.asset_selection is None
    assert (request.tags["dagster/asset_partition_range_start"], request.tags["dagster/asset_partition_range_end"]) == (
        first,
        snapshot_id(repo),
    )


def test_schedule_on_an_unreachable_source_asks_for_the_run_that_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr("pipelines.ingest.source.retry.BACKOFF_SECONDS", 0.01)
    warehouse = warehouse_resource(tmp_path / "w", f"file://{tmp_path}/no-such-repo.git", tmp_path / "cache")
    with dg.instance_for_test() as instance:  # a schedule's context opens its instance by reference
        request = scheduled(warehouse, instance, 1)
        assert request.partition_key is None and dg.AssetKey("upstream_source") in request.asset_selection
        result = run_request(warehouse, request, instance, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "upstream_source" and "LIGER_SOURCE" in failure.step_failure_data.error.cause.message


@pytest.mark.slow
def test_daily_runs_ingest_then_change_nothing(upstream_repo, tmp_path, instance_kind_home):
    """Two scheduled days executed on a persistent instance of each kind: the second, with nothing new upstream, rewrites nothing."""
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface"))}, "data")
    warehouse = warehouse_resource(tmp_path / "w", str(upstream_repo.path), tmp_path / "cache")
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        executed = []
        for day in (1, 2):
            executed.append(run_request(warehouse, scheduled(warehouse, instance, day), instance))
            if day == 1:
                tables = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in warehouse.path.glob("*.parquet")}
        assert [r.dagster_run.status for r in instance.get_run_records()] == [dg.DagsterRunStatus.SUCCESS] * 2
    assert all(result.success for result in executed)
    assert [len(partitions_staged(result)) for result in executed] == [1, 0]
    assert pl.read_parquet(warehouse.path / "runs.parquet").height == 2
    assert {e.asset_key.to_user_string() for e in executed[1].get_asset_materialization_events()} == {"upstream_source"}
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in warehouse.path.glob("*.parquet")} == tables


def test_a_build_failing_a_blocking_check_is_never_published(upstream_repo, tmp_path, monkeypatch):
    # Quantiles out of order upstream are quarantined by the normalizer: the row never reaches a table.
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch", y50="0.5", y20="0.7", y80="0.6"))}, "bad quantiles")
    for name, value in {"WAREHOUSE_DIR": tmp_path / "w", "LIGER_SOURCE": upstream_repo.path, "LIGER_CACHE_DIR": tmp_path / "c"}.items():
        monkeypatch.setenv(name, str(value))
    from pipelines.definitions import defs

    with dg.DagsterInstance.ephemeral() as instance:
        assert ingest(defs(), instance).success
        quarantine = pl.read_parquet(tmp_path / "w" / "quarantine.parquet")
        assert quarantine["reason"].str.contains("quantiles out of order").to_list() == [True]
        published = {name: (tmp_path / "w" / f"{name}.parquet").read_bytes() for name in ("runs", "measurements")}
        database = (tmp_path / "w" / "warehouse.duckdb").read_bytes()

        # A tables build that fails a blocking check (code gone wrong, say) is never what readers see.
        upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface"))}, "more")
        broken = checks.CheckOutcome(False, "1 passed runs break p20 <= p50 <= p80")
        monkeypatch.setattr(
            build, "CHECKS", tuple((t, n, (lambda _: broken) if n == "quantiles_ordered" else f, b) for t, n, f, b in build.CHECKS)
        )
        result = ingest(defs(), instance, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "quantiles_ordered" in failure.step_failure_data.error.message and "not published" in failure.step_failure_data.error.message
    assert {name: (tmp_path / "w" / f"{name}.parquet").read_bytes() for name in ("runs", "measurements")} == published
    assert (tmp_path / "w" / "warehouse.duckdb").read_bytes() == database
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert not materialized & {"runs", "comparable_groups", "resource_documents", "report"}


def test_upstream_source_counts_as_new_the_snapshots_its_run_stages(setup):
    """The command registers a run's partitions before it starts: upstream_source still names them new, in the run
    that stages them, and none in a run with nothing to stage."""
    repo, warehouse = setup

    def new_partitions(result: dg.ExecuteInProcessResult) -> list[str]:
        [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("upstream_source")]
        return event.materialization.metadata["new_partitions"].value

    with dg.DagsterInstance.ephemeral() as instance:
        first = snapshot_id(repo)
        assert new_partitions(ingested(warehouse, instance)) == [first]
        repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch"))}, "second data")
        assert new_partitions(ingested(warehouse, instance)) == [snapshot_id(repo)]
        assert new_partitions(ingested(warehouse, instance)) == []
