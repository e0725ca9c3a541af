"""Every upstream snapshot is a partition of raw_snapshots; the normalizer's version is its code version."""

from __future__ import annotations

import hashlib
import importlib
import subprocess

import dagster as dg
import pytest
from conftest import git, liger_csv, liger_row
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest
from test_materialize import DATA, load_defs, staged

from pipelines.core import layout
from pipelines.core.settings import DEFAULT_BASELINES
from pipelines.ingest import staging
from pipelines.ingest.steps import recorded_listing
from pipelines.orchestration import plan
from pipelines.orchestration.materialize import ingest

RAW = dg.AssetKey("raw_snapshots")


def statuses(definitions: dg.Definitions, instance: dg.DagsterInstance, keys: list[str]) -> set[StaleStatus]:
    """What the UI shows on each partition: fresh, stale or missing (Dagster's own resolver)."""
    resolver = CachingStaleStatusResolver(instance, definitions.resolve_asset_graph(), LoadingContextForTest(instance))
    return {resolver.get_status(RAW, key) for key in keys}


@pytest.fixture
def new_normalizer(monkeypatch):
    """The definitions as a release with the next normalizer version would load them; put back afterwards."""
    version = staging.NORMALIZER_VERSION + "-next"

    def load() -> None:
        monkeypatch.setattr(staging, "NORMALIZER_VERSION", version)
        monkeypatch.setattr(plan, "NORMALIZER_CODE_VERSION", version)
        importlib.reload(importlib.import_module("pipelines.defs.source.assets"))

    yield load
    monkeypatch.undo()
    importlib.reload(importlib.import_module("pipelines.defs.source.assets"))


@pytest.mark.slow
def test_a_new_normalizer_makes_every_partition_stale_and_stages_them_again(upstream_repo, tmp_path, monkeypatch, new_normalizer):
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch"))}, "two")
    definitions = load_defs(monkeypatch, tmp_path / "warehouse", upstream_repo.path, tmp_path / "cache")
    with dg.instance_for_test() as instance:
        first = ingest(definitions, instance)
        keys = instance.get_dynamic_partitions("snapshots")
        assert sorted(staged(first)) == sorted(keys) and len(keys) == 2
        assert staged(ingest(definitions, instance)) == {}, "unchanged code staged a snapshot again"
        assert statuses(definitions, instance, keys) == {StaleStatus.FRESH}

        new_normalizer()
        definitions = load_defs(monkeypatch, tmp_path / "warehouse", upstream_repo.path, tmp_path / "cache")
        assert statuses(definitions, instance, keys) == {StaleStatus.STALE}
        again = ingest(definitions, instance)
        assert sorted(staged(again)) == sorted(keys)
        assert statuses(definitions, instance, keys) == {StaleStatus.FRESH}
        assert staged(ingest(definitions, instance)) == {}


@pytest.mark.slow
def test_a_staging_folder_deleted_by_hand_is_staged_again_alone(upstream_repo, tmp_path, monkeypatch):
    """Dagster's record cannot see a file deleted outside it: the plan also reads the staging itself."""
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    first = f"{git(upstream_repo.path, 'rev-parse', 'HEAD')[:12]}/all_benchmark_data.csv"
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch"))}, "two")
    warehouse = tmp_path / "warehouse"
    definitions = load_defs(monkeypatch, warehouse, upstream_repo.path, tmp_path / "cache")
    with dg.instance_for_test() as instance:
        assert ingest(definitions, instance).success
        versions = data_versions(instance)
        assert staged(ingest(definitions, instance)) == {}
        assert data_versions(instance) == versions, "a no-change run gave a table or statistic a new data version"
        (layout.Layout(warehouse).staged(first) / layout.META).unlink()
        again = ingest(definitions, instance)
    assert again.success and list(staged(again)) == [first]


def data_versions(instance: dg.DagsterInstance) -> dict[str, str]:
    """The data version Dagster holds for each table and statistic."""
    keys = [dg.AssetKey(name) for name in ("runs", "measurements", "snapshots", "comparable_groups", "kernel_scorecard")]
    return {
        key.to_user_string(): instance.get_latest_data_version_record(key).asset_materialization.tags["dagster/data_version"]
        for key in keys
    }


def test_staging_on_two_processes_builds_the_same_tables_as_on_one(upstream_repo, tmp_path, monkeypatch):
    import polars as pl
    from polars.testing import assert_frame_equal

    from pipelines.assemble.tables_build import TABLE_NAMES, build_tables
    from pipelines.core.settings import for_source
    from pipelines.ingest import stage_pool
    from pipelines.ingest.steps import stage_new, sync

    started = []
    monkeypatch.setattr(stage_pool, "_on_workers", spying(stage_pool._on_workers, started))
    count = 1 + stage_pool.SAMPLE + stage_pool.PARALLEL_FROM
    for day in range(1, count + 1):
        rows = [liger_row(timestamp=f"2025-01-{day:02d} 00:00:00", y50=f"0.{day}"), liger_row(provider="torch", x_value=str(day))]
        upstream_repo.commit({DATA: liger_csv(*rows)}, f"day {day}")
    built = {}
    for workers in (1, 2):
        warehouse = tmp_path / f"warehouse-{workers}"
        # Whatever their pace, the workers start once this process has staged the first and its sample of the pace.
        source = for_source(
            str(upstream_repo.path), "main", "benchmark/data/all_benchmark_data*.csv", tmp_path / "cache", staging_parallel_after_s=0
        )
        listing = sync(warehouse, source)
        assert len(stage_new(warehouse, source, listing, workers=workers).staged) == count
        build_tables(warehouse, listing)
        built[workers] = {name: pl.read_parquet(warehouse / f"{name}.parquet") for name in TABLE_NAMES}
    assert started == [stage_pool.PARALLEL_FROM], "two workers staged the snapshots after the sample"
    for name in TABLE_NAMES:
        assert_frame_equal(built[1][name], built[2][name], check_exact=True)


def spying(function, calls: list):
    """`function`, recording how many jobs each call was given."""

    def spy(warehouse, settings, jobs, workers):
        calls.append(len(jobs))
        return function(warehouse, settings, jobs, workers)

    return spy


def test_every_asset_writes_through_one_dagster_pool_of_one_slot():
    """Serialization is Dagster's: writers wait in the pool, where the UI shows it (no one-run queue)."""
    import yaml

    from pipelines.core import settings
    from pipelines.definitions import defs

    graph = defs().resolve_asset_graph()
    assert {frozenset(graph.get(key).pools) for key in graph.get_all_asset_keys()} == {frozenset({"warehouse_writers"})}
    for config in (settings.PROJECT_ROOT / "dagster.yaml", settings.PROJECT_ROOT / "deploy" / "postgres" / "dagster.yaml"):
        instance = yaml.safe_load(config.read_text())
        assert instance["concurrency"]["pools"]["default_limit"] == 1
        assert "max_concurrent_runs" not in instance["run_coordinator"].get("config", {})


def partition_versions(instance: dg.DagsterInstance, keys: list[str]) -> dict[str, str]:
    """Each partition's data version as Dagster's staleness reads it (its latest materialization's)."""
    return {
        key: instance.get_latest_data_version_record(RAW, partition_key=key).asset_materialization.tags["dagster/data_version"]
        for key in keys
    }


@pytest.mark.slow
def test_a_partitions_data_version_is_its_content_so_a_rewritten_snapshot_gets_a_new_one(upstream_repo, tmp_path, monkeypatch):
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch"))}, "two")
    warehouse, cache = tmp_path / "warehouse", tmp_path / "cache"
    definitions = load_defs(monkeypatch, warehouse, upstream_repo.path, cache)
    with dg.instance_for_test() as instance:
        assert ingest(definitions, instance).success
        keys = instance.get_dynamic_partitions("snapshots")
        versions = partition_versions(instance, keys)
        # One range run: every partition still carries its own content, not the run's one data version.
        contents = {key: hashlib.sha256(git_bytes(upstream_repo.path, f"{key.split('/')[0]}:{DATA}")).hexdigest() for key in keys}
        assert versions == {key: f"sha256:{contents[key]}.normalizer:{staging.NORMALIZER_VERSION}" for key in keys}
        assert len(set(versions.values())) == 2

        # Upstream's bytes of the first snapshot replaced under the same commit and file (a git replace object in the
        # clone the warehouse reads): the same partition id with new content. Staged again, it gets a new data version.
        first, second = keys
        [clone] = [path for path in cache.iterdir() if path.name.startswith("git-") and path.is_dir()]
        rewritten = liger_csv(liger_row(y50="0.7")).encode()
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=clone, input=rewritten, capture_output=True, check=True)
        git(clone, "replace", git(clone, "rev-parse", f"{first.split('/')[0]}:{DATA}"), blob.stdout.decode().strip())
        job = definitions.resolve_implicit_global_asset_job_def()
        assert job.execute_in_process(instance=instance, partition_key=first, asset_selection=[RAW]).success
        after = partition_versions(instance, keys)
        assert after[first] == f"sha256:{hashlib.sha256(rewritten).hexdigest()}.normalizer:{staging.NORMALIZER_VERSION}"
        assert after[first] != versions[first] and after[second] == versions[second]
        # Dagster's record and the staging agree again: nothing to stage; but the tables were built from the old bytes,
        # so the next run is no "nothing changed" one.
        again = plan.plan_ingest(instance, warehouse, recorded_listing(warehouse), DEFAULT_BASELINES)
        assert again.stage_keys == () and again.kept == frozenset()


def git_bytes(repo, spec: str) -> bytes:
    return subprocess.run(["git", "show", spec], cwd=repo, capture_output=True, check=True).stdout
