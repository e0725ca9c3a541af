"""One freshness mechanism: each stage's code version is a digest of the code and SQL it runs, its build key is its
data version, so Dagster's staleness and the skip agree. A change to one module or SQL file of a stage shows exactly
the assets that depend on it stale in Dagster, and the next run gives exactly those a new data version; a run with
no change keeps every data version, the exports' and the report's included."""

from __future__ import annotations

import importlib
from pathlib import Path

import dagster as dg
import pytest
from conftest import liger_csv, liger_row
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest
from test_materialize import DATA, load_defs, staged

from pipelines.assemble import tables_build
from pipelines.core import code_version, layout, sql_files
from pipelines.exports.report import report_build
from pipelines.orchestration.materialize import ingest
from pipelines.statistics import db
from pipelines.statistics import statistic_versions as versions
from pipelines.storage import builds

# The definitions' modules, which set each asset's code version when they are imported.
DEFS_MODULES = (
    "pipelines.defs.tables.assets",
    "pipelines.defs.statistics.assets",
    "pipelines.defs.exports.assets",
    "pipelines.defs.exports.liger_exports",
    "pipelines.defs.exports.report",
)
SOURCE = {"upstream_source", "raw_snapshots"}
TABLES = set(tables_build.TABLE_NAMES)
EXPORTS = {"resource_documents", "latest_liger_csvs", "bmf_exports"}


def changed_module(monkeypatch, tmp_path: Path, module: str) -> None:
    """`module` as if a statement were added to it: its code digest changes, what it computes does not."""
    known = code_version.modules()
    copy = tmp_path / f"{module}.py"
    copy.write_text(known[module].read_text() + "\n_A_CHANGED_LINE = 1\n")
    monkeypatch.setattr(code_version, "modules", lambda root=code_version.PACKAGE: {**known, module: copy})


def changed_sql(monkeypatch, name: str) -> None:
    """The SQL file `name` with a comment added: the statistic computes the same rows, its description differs."""
    original = sql_files.text

    def text(asked: str) -> str:
        return original(asked).replace("\n", "\n-- a comment added by hand\n", 1) if asked == name else original(asked)

    monkeypatch.setattr(sql_files, "text", text)


def reload_definitions(monkeypatch, tmp_path: Path, source: Path) -> dg.Definitions:
    """The definitions as a process started after the change would load them."""
    for cached in (
        tables_build.tables_code_version,
        versions.statistic_code_version,
        versions.database_code_version,
        report_build.report_code_version,
    ):
        cached.cache_clear()
    for module in DEFS_MODULES:
        importlib.reload(importlib.import_module(module))
    return load_defs(monkeypatch, tmp_path / "warehouse", source, tmp_path / "cache")


def stale(definitions: dg.Definitions, instance: dg.DagsterInstance) -> set[str]:
    """The unpartitioned assets Dagster shows stale."""
    graph = definitions.resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    keys = [key for key in graph.get_all_asset_keys() if key.to_user_string() not in SOURCE]
    return {key.to_user_string() for key in keys if resolver.get_status(key) == StaleStatus.STALE}


def data_versions(definitions: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, str]:
    keys = [key for key in definitions.resolve_asset_graph().get_all_asset_keys() if key.to_user_string() not in SOURCE]
    return {
        key.to_user_string(): instance.get_latest_data_version_record(key).asset_materialization.tags["dagster/data_version"]
        for key in keys
    }


def test_a_module_change_is_a_new_normalizer_version(monkeypatch, tmp_path):
    before = code_version.code_version(["pipelines.ingest.staging"])
    changed_module(monkeypatch, tmp_path, "pipelines.ingest.normalize.rules")
    assert code_version.code_version(["pipelines.ingest.staging"]) != before
    assert code_version.code_version(["pipelines.exports.bmf"]) == code_version.code_version(["pipelines.exports.bmf"])


def test_a_comment_or_docstring_changes_no_code_version(monkeypatch, tmp_path):
    """Issue 30: a comment anywhere restages nothing; reflowed docstrings and blank lines neither."""
    entries = ["pipelines.ingest.staging", "pipelines.assemble.tables_build", "pipelines.exports.report.report_build"]
    before = {entry: code_version.code_version([entry]) for entry in entries}
    known = code_version.modules()
    edited = {}
    for module in ("pipelines.core.layout", "pipelines.ingest.normalize.rules", "pipelines.exports.report.svg"):
        source = known[module].read_text()
        copy = tmp_path / f"{module}.py"
        # A comment line, a blank line, and each docstring's text changed: no statement changed.
        copy.write_text("# a comment added by hand\n\n" + source.replace('"""', '"""Reworded. ', 1) + "\n# the end\n")
        edited[module] = copy
    monkeypatch.setattr(code_version, "modules", lambda root=code_version.PACKAGE: {**known, **edited})
    assert {entry: code_version.code_version([entry]) for entry in entries} == before


def test_a_statistic_counts_its_own_sql_and_not_the_others(monkeypatch):
    before = {name: versions.statistic_code_version(name) for name in db.STATISTICS}
    versions.statistic_code_version.cache_clear()
    changed_sql(monkeypatch, "statistics/kernel_scorecard")
    after = {name: versions.statistic_code_version(name) for name in db.STATISTICS}
    versions.statistic_code_version.cache_clear()
    assert {name for name in db.STATISTICS if before[name] != after[name]} == {"kernel_scorecard"}


@pytest.mark.slow
def test_a_change_makes_exactly_its_dependents_stale_and_the_next_run_rebuilds_exactly_those(upstream_repo, tmp_path, monkeypatch):
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9"))}, "one")
    upstream_repo.commit(
        {DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.8", timestamp="2025-02-01 00:00:00"))}, "two"
    )
    definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
    everything = TABLES | set(db.STATISTICS) | EXPORTS | {"report"}
    # What changed, the assets Dagster then shows stale (their code version changed: what is downstream of them is
    # stale once they have a new data version), and those the next run gives a new data version.
    cases = [
        ("a module of the report", lambda: changed_module(monkeypatch, tmp_path, "pipelines.exports.report.svg"), {"report"}, {"report"}),
        (
            "a module of one export",
            lambda: changed_module(monkeypatch, tmp_path, "pipelines.exports.bmf"),
            {"bmf_exports"},
            {"bmf_exports"},
        ),
        (
            "one statistic's SQL, a comment",
            lambda: changed_sql(monkeypatch, "statistics/kernel_scorecard"),
            {"kernel_scorecard"},
            {"kernel_scorecard", "report"},
        ),
        (
            "a module of the assembly",
            lambda: changed_module(monkeypatch, tmp_path, "pipelines.assemble.table_builders"),
            TABLES,
            everything,
        ),
    ]
    # A view (run_noise) is made again from its SQL in every build: it holds no rows to copy.
    computed = {"one statistic's SQL, a comment": {"kernel_scorecard", *db.VIEWS}, "a module of the assembly": set(db.STATISTICS)}
    try:
        with dg.instance_for_test() as instance:
            assert ingest(definitions, instance).success
            assert stale(definitions, instance) == set()
            first = data_versions(definitions, instance)
            assert ingest(definitions, instance).success
            assert data_versions(definitions, instance) == first, "a run with no change gave an asset a new data version"
            before = first
            for what, change, shown_stale, rebuilt in cases:
                change()
                definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
                assert stale(definitions, instance) == shown_stale, what
                assert ingest(definitions, instance).success
                after = data_versions(definitions, instance)
                assert {name for name in after if after[name] != before[name]} == rebuilt, what
                assert stale(definitions, instance) == set(), what
                if what in computed:  # the statistics warehouse.duckdb computed again; it copied the others
                    database = builds.Stage(tmp_path / "warehouse", layout.DATABASE_STAGE).current()
                    assert set(database.result["computed"]) == computed[what], what
                before = after
    finally:
        monkeypatch.undo()
        reload_definitions(monkeypatch, tmp_path, upstream_repo.path)


@pytest.mark.slow
def test_a_file_deleted_by_hand_fails_its_builds_check_and_the_next_run_builds_it_again(upstream_repo, tmp_path, monkeypatch):
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9"))}, "one")
    definitions = load_defs(monkeypatch, tmp_path / "warehouse", upstream_repo.path, tmp_path / "cache")
    warehouse = tmp_path / "warehouse"
    check_job = definitions.resolve_job_def("check_builds")
    with dg.instance_for_test() as instance:
        assert ingest(definitions, instance).success
        assert all(e.passed for e in check_job.execute_in_process(instance=instance).get_asset_check_evaluations())
        [bmf_file] = (warehouse / "exports" / "bmf").glob("*.json")
        bmf_file.unlink()
        (warehouse / "report").unlink()
        failed = {
            e.asset_key.to_user_string(): e
            for e in check_job.execute_in_process(instance=instance).get_asset_check_evaluations()
            if not e.passed
        }
        assert failed.keys() == {"bmf_exports", "report"}
        assert f"{bmf_file.name} was deleted" in failed["bmf_exports"].description
        assert str(warehouse / "report") in failed["report"].description
        assert stale(definitions, instance) == set(), "Dagster alone cannot see it: the check is what says so"
        assert ingest(definitions, instance).success
        assert bmf_file.is_file() and (warehouse / "report" / "index.html").is_file()
        assert all(e.passed for e in check_job.execute_in_process(instance=instance).get_asset_check_evaluations())


def test_a_warehouse_from_before_builds_loses_its_stamps_to_the_first_writer(tmp_path):
    from pipelines.core import layout
    from pipelines.storage import store

    for name in layout.FORMER_STAMPS:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".json"):
            path.write_text("{}")
        else:
            path.mkdir()
            (path / "resource_documents.json").write_text("{}")
    (tmp_path / "runs.parquet").write_bytes(b"kept")
    with store.writer_lock(tmp_path):
        pass
    assert not any((tmp_path / name).exists() for name in layout.FORMER_STAMPS)
    assert (tmp_path / "runs.parquet").read_bytes() == b"kept"


def requested(result) -> set[str]:
    return {key.to_user_string() for key in result._requested_partitions_by_asset_key}


@pytest.mark.slow
def test_the_automation_conditions_ask_for_exactly_what_a_code_change_made_stale(upstream_repo, tmp_path, monkeypatch):
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9"))}, "one")
    try:
        definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
        assert "warehouse_automation" in {sensor.name for sensor in definitions.get_repository_def().sensor_defs}
        with dg.instance_for_test() as instance:
            assert ingest(definitions, instance).success
            first = dg.evaluate_automation_conditions(defs=definitions, instance=instance)
            assert requested(first) == set(), "an up-to-date warehouse asked for a run"
            unchanged = dg.evaluate_automation_conditions(defs=definitions, instance=instance, cursor=first.cursor)
            assert requested(unchanged) == set()
            changed_module(monkeypatch, tmp_path, "pipelines.exports.bmf")
            definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
            after = dg.evaluate_automation_conditions(defs=definitions, instance=instance, cursor=unchanged.cursor)
            assert requested(after) == {"bmf_exports"}
    finally:
        monkeypatch.undo()
        reload_definitions(monkeypatch, tmp_path, upstream_repo.path)


@pytest.mark.slow
def test_a_normalizer_change_shows_the_staged_partitions_stale_and_the_next_run_stages_them_again(upstream_repo, tmp_path, monkeypatch):
    from pipelines.ingest import staging
    from pipelines.orchestration import plan

    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9"))}, "two")
    definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
    key = dg.AssetKey("raw_snapshots")

    def partition_status(definitions: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, StaleStatus]:
        resolver = CachingStaleStatusResolver(instance, definitions.resolve_asset_graph(), LoadingContextForTest(instance))
        return {partition: resolver.get_status(key, partition) for partition in instance.get_dynamic_partitions(plan.SNAPSHOTS.name)}

    try:
        with dg.instance_for_test() as instance:
            assert ingest(definitions, instance).success
            assert set(partition_status(definitions, instance).values()) == {StaleStatus.FRESH}
            # A process started after a staging module changed: the normalizer's version is the new digest.
            changed = code_version.code_version(["pipelines.ingest.staging"]) + "-changed"
            monkeypatch.setattr(staging, "NORMALIZER_VERSION", changed)
            monkeypatch.setattr(plan, "NORMALIZER_CODE_VERSION", changed)
            monkeypatch.setattr(plan, "STAGED_DATA_VERSION", dg.DataVersion(f"normalizer-{changed}"))
            importlib.reload(importlib.import_module("pipelines.defs.source.assets"))
            definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
            statuses = partition_status(definitions, instance)
            assert len(statuses) == 2 and set(statuses.values()) == {StaleStatus.STALE}
            result = ingest(definitions, instance)
            assert result.success
            assert set(staged(result)) == set(statuses), "every partition staged again by the new normalizer"
            assert set(partition_status(definitions, instance).values()) == {StaleStatus.FRESH}
    finally:
        monkeypatch.undo()
        importlib.reload(importlib.import_module("pipelines.defs.source.assets"))
        reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
