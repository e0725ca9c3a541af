"""All assets materialized in-process on a git repository made here, and the CLI around it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import liger_csv, liger_row

from pipelines.core import schemas, settings
from pipelines.defs.common import table_schema
from pipelines.orchestration.materialize import ingest

DATA = "benchmark/data/all_benchmark_data.csv"


def load_defs(monkeypatch, warehouse, source, cache) -> dg.Definitions:
    monkeypatch.setenv("WAREHOUSE_DIR", str(warehouse))
    monkeypatch.setenv("LIGER_SOURCE", str(source))
    monkeypatch.setenv("LIGER_CACHE_DIR", str(cache))
    from pipelines.definitions import defs

    return defs()


def materialize_everything(definitions: dg.Definitions, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """What `python -m pipelines materialize` runs: the new snapshots as partitions, then one run."""
    return ingest(definitions, instance)


def metadata_of(result: dg.ExecuteInProcessResult, key: str) -> dict:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(key)]
    return event.materialization.metadata


def materialized(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


# What a run with nothing new upstream, in the code or in the settings materializes: the source it listed, no other asset.
NOTHING_CHANGED = {"upstream_source"}


def staged(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    """The metadata of each raw_snapshots partition the run materialized, by partition key."""
    events = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("raw_snapshots")]
    return {e.partition: e.materialization.metadata for e in events}


@pytest.mark.slow
def test_every_asset_materializes_on_a_small_repo(upstream_repo, tmp_path, monkeypatch, dagster_instance):
    """On a persistent instance of each kind (SQLite, PostgreSQL): all assets, a no-change re-run, a new commit."""
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1"))}, "one")
    upstream_repo.commit(
        {
            DATA: liger_csv(
                liger_row(timestamp="2025-02-01 00:00:00", y50="0.45"), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1")
            )
        },
        "two",
    )
    warehouse = tmp_path / "warehouse"
    definitions = load_defs(monkeypatch, warehouse, upstream_repo.path, tmp_path / "cache")
    result = materialize_everything(definitions, dagster_instance)
    assert result.success
    expected = {
        "upstream_source",
        "raw_snapshots",
        "runs",
        "measurements",
        "environments",
        "protocols",
        "snapshots",
        "run_snapshots",
        "quarantine",
        "resource_documents",
    }
    assert expected <= materialized(result)
    assert all(e.passed for e in result.get_asset_check_evaluations())
    assert metadata_of(result, "runs")["dagster/row_count"].value == 3
    assert [m["accepted"].value for m in staged(result).values()] == [2, 2]
    runs = pl.read_parquet(warehouse / "runs.parquet")
    assert runs.height == 3 and runs["in_latest"].sum() == 2
    assert (warehouse / "exports" / "runs.ndjson").read_text().count("\n") == 3

    database = warehouse / "warehouse.duckdb"
    before = database.stat()
    exported = exported_files(warehouse)
    again = materialize_everything(definitions, dagster_instance)
    assert again.success
    assert staged(again) == {}, "a no-change run staged a snapshot again"
    assert materialized(again) == NOTHING_CHANGED, "a no-change run materialized more than the source"
    assert (database.stat().st_ino, database.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert exported_files(warehouse) == exported, "a no-change run rewrote an export"

    # An export file someone deleted is written again, though nothing else changed.
    [bmf_file] = (warehouse / "exports" / "bmf").glob("*.json")
    bmf_file.unlink()
    assert materialize_everything(definitions, dagster_instance).success
    assert bmf_file.is_file()

    upstream_repo.commit({DATA: liger_csv(liger_row(timestamp="2025-03-01 00:00:00", y50="0.4"))}, "three")
    assert materialize_everything(definitions, dagster_instance).success
    assert (warehouse / "exports" / "runs.ndjson").read_text().count("\n") == 4
    assert exported_files(warehouse).keys() == exported.keys()
    assert all(exported_files(warehouse)[name] != exported[name] for name in ("runs.ndjson", "liger_csv/all_benchmark_data.csv"))
    assert [r.dagster_run.status for r in dagster_instance.get_run_records()] == [dg.DagsterRunStatus.SUCCESS] * 4


@pytest.mark.slow
def test_a_run_with_nothing_new_upstream_still_builds_what_the_settings_or_dagsters_record_need(upstream_repo, tmp_path, monkeypatch):
    """A run that stages nothing materializes the source alone only when every build would be kept and Dagster holds
    its data version: other baselines (a setting Dagster cannot see) rebuild the statistics, and an asset whose record
    was wiped is materialized again."""
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9"))}, "one")
    warehouse = tmp_path / "warehouse"
    definitions = load_defs(monkeypatch, warehouse, upstream_repo.path, tmp_path / "cache")
    with dg.instance_for_test() as instance:
        assert materialize_everything(definitions, instance).success
        assert materialized(materialize_everything(definitions, instance)) == NOTHING_CHANGED

        monkeypatch.setenv("LIGER_BASELINES", "torch")
        other = load_defs(monkeypatch, warehouse, upstream_repo.path, tmp_path / "cache")
        rebuilt = materialize_everything(other, instance)
        assert {"comparable_groups", "report"} <= materialized(rebuilt)
        assert metadata_of(rebuilt, "comparable_groups")["rebuilt"].value is True
        assert materialized(materialize_everything(other, instance)) == NOTHING_CHANGED

        instance.wipe_assets([dg.AssetKey("report")])
        assert "report" in materialized(materialize_everything(other, instance))
        assert materialized(materialize_everything(other, instance)) == NOTHING_CHANGED

        # warehouse.duckdb changed in place, its size kept (bit rot, a copy tool): its sha256 says so, and it is built again.
        database = (warehouse / "warehouse.duckdb").resolve()
        data = bytearray(database.read_bytes())
        data[-1] ^= 0xFF
        database.write_bytes(bytes(data))
        repaired = materialize_everything(other, instance)
        assert metadata_of(repaired, "comparable_groups")["rebuilt"].value is True


def exported_files(warehouse) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of every export file, by its path under exports/ (its folders are links into their builds)."""
    root = warehouse / "exports"
    paths = [Path(folder, name) for folder, _, names in os.walk(root, followlinks=True) for name in names]
    return {str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in paths}


def test_every_asset_has_a_description_group_and_kind(monkeypatch, tmp_path):
    definitions = load_defs(monkeypatch, tmp_path / "w", tmp_path, tmp_path / "c")
    graph = definitions.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.description, key
        assert node.group_name in {"source", "tables", "statistics", "exports"}, key


def test_every_check_and_table_column_has_a_description(monkeypatch, tmp_path):
    definitions = load_defs(monkeypatch, tmp_path / "w", tmp_path, tmp_path / "c")
    graph = definitions.resolve_asset_graph()
    checks = {key: graph.get_check_spec(key) for key in graph.asset_check_keys}
    assert len(checks) >= 10
    assert [key.to_user_string() for key, spec in checks.items() if not spec.description] == []
    for table, schema in schemas.TABLES.items():
        assert [c.name for c in table_schema(schema, table).columns if not c.description] == [], table


@pytest.mark.slow
def test_definitions_validate():
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-m", "pipelines.definitions"],
        cwd=settings.PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def run_cli(args, env_extra, cwd, timeout=300):
    env = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, "-m", "pipelines", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def dagster_home(tmp_path):
    home = tmp_path / "dagster-home"
    home.mkdir()
    shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    return home


@pytest.mark.slow
def test_cli_unreachable_source_fails_with_one_clear_line(tmp_path, dagster_home):
    result = run_cli(
        ["materialize"],
        {
            "DAGSTER_HOME": str(dagster_home),
            "WAREHOUSE_DIR": str(tmp_path / "w"),
            "LIGER_CACHE_DIR": str(tmp_path / "c"),
            "LIGER_SOURCE": "file:///nonexistent/liger.git",
        },
        tmp_path,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("failed: upstream_source: cannot read the Liger benchmark source 'file:///nonexistent/liger.git'")
    assert "LIGER_SOURCE" in last


@pytest.mark.slow
def test_cli_materialize_then_show_run(upstream_repo, tmp_path, instance_kind, instance_kind_home):
    """`python -m pipelines materialize` with DAGSTER_HOME at either instance configuration (SQLite, PostgreSQL)."""
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    env = {
        "DAGSTER_HOME": str(instance_kind_home),
        "WAREHOUSE_DIR": str(tmp_path / "w"),
        "LIGER_CACHE_DIR": str(tmp_path / "c"),
        "LIGER_SOURCE": str(upstream_repo.path),
    }
    result = run_cli(["materialize"], env, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "materialized every asset" in result.stdout
    assert (instance_kind_home / "data" / "dagster" / "storage").is_dir() == (instance_kind == "sqlite")
    again = run_cli(["materialize"], env, tmp_path)
    assert again.returncode == 0 and "nothing changed upstream, in the code or in the settings" in again.stdout, again.stdout
    with dg.DagsterInstance.from_config(str(instance_kind_home)) as instance:
        assert [r.dagster_run.status for r in instance.get_run_records()] == [dg.DagsterRunStatus.SUCCESS] * 2
    run_id = pl.read_parquet(tmp_path / "w" / "runs.parquet")["run_id"][0]
    shown = run_cli(["show-run", run_id], env, tmp_path)
    document = json.loads(shown.stdout)
    assert document["run"]["spec"]["sourceNative"]["externalId"] == run_id
    assert document["environment"]["spec"]["hardware"]["architecture"] == "sm_80"
    missing = run_cli(["show-run", "no/such/run"], env, tmp_path)
    assert missing.returncode == 1 and "no run" in missing.stderr


def test_progress_lines_are_at_most_one_per_interval(monkeypatch):
    from pipelines.defs import common

    clock = iter([0.0, 0.0, 1.0, 2.9, 3.0, 3.0, 3.1, 10.0, 10.0])
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))
    logged = []
    log = common.at_most_every(3.0, logged.append)
    for message in ["a", "b", "c", "d", "e", "f"]:
        log(message)
    assert logged == ["a", "d", "f"]
