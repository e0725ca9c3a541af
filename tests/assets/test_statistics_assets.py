"""Each statistic is an asset Dagster can run alone, its edges read from its SQL (`statistics.lineage`): a run that
selects one statistic computes it and the statistics it reads whose keys changed, and copies the others as they are."""

from __future__ import annotations

import dagster as dg
import pytest
from conftest import liger_csv, liger_row
from test_materialize import DATA
from test_staleness import changed_module, changed_sql, data_versions, reload_definitions, stale

from pipelines.core import layout
from pipelines.orchestration.materialize import ingest
from pipelines.statistics import db, lineage
from pipelines.storage import builds

# The edges as they were kept by hand before the parser derived them (db.STATISTIC_INPUTS): the parser must find
# every one of them, and no other.
HAND_KEPT = {
    "series_noise": (),
    # Change points are searched only in series of a known noise (sql/series/candidate_series.sql), since round three.
    "change_points": ("series_noise",),
    "run_noise": (),
    "provider_comparisons": (),
    "comparable_groups": ("provider_comparisons",),
    "kernel_scorecard": ("provider_comparisons",),
    "sweep_comparisons": ("provider_comparisons",),
    "version_changes": ("series_noise",),
}


def test_the_edges_read_from_the_sql_are_the_ones_kept_by_hand_before():
    assert dict(lineage.statistic_inputs()) == HAND_KEPT


def test_the_statistics_are_listed_inputs_first():
    inputs = lineage.statistic_inputs()
    for position, name in enumerate(db.STATISTICS):
        assert set(inputs[name]) <= set(db.STATISTICS[:position]), name


def test_the_parser_finds_tables_in_joins_subqueries_and_ctes_but_not_the_ctes_themselves():
    sql = """
        WITH latest AS (SELECT * FROM runs WHERE run_id IN (SELECT run_id FROM measurements))
        SELECT * FROM latest
        LEFT JOIN series_noise USING (group_id)
        WHERE EXISTS (SELECT 1 FROM snapshots)
        UNION ALL SELECT * FROM provider_comparisons
    """
    assert lineage.tables_read(sql) == {"runs", "measurements", "series_noise", "snapshots", "provider_comparisons"}
    with pytest.raises(lineage.UnreadableSql, match="cannot parse"):
        lineage.tables_read("SELECT FROM WHERE (")


def test_an_intermediate_stands_for_what_it_reads_and_its_sql_counts_as_the_statistics_code():
    assert "latest_runs" in lineage.reads("provider_comparisons")
    assert lineage.intermediates_read("provider_comparisons") == ("latest_runs",)
    assert lineage.intermediates_read("kernel_scorecard") == ()


def test_a_run_needs_what_its_statistics_read_and_both_series_statistics_together():
    assert lineage.needed(["kernel_scorecard"]) == {"kernel_scorecard", "provider_comparisons"}
    assert lineage.needed(["version_changes"]) == {"version_changes", "series_noise", "change_points"}
    assert lineage.needed(None) == set(db.STATISTICS)
    with pytest.raises(KeyError, match="not statistics: runs"):
        lineage.needed(["runs"])


def computed(warehouse) -> set[str]:
    return set(builds.Stage(warehouse, layout.DATABASE_STAGE).current().result["computed"])


def run_only(definitions: dg.Definitions, instance: dg.DagsterInstance, *names: str) -> dg.ExecuteInProcessResult:
    job = definitions.resolve_implicit_global_asset_job_def()
    return job.execute_in_process(instance=instance, asset_selection=[dg.AssetKey(name) for name in names])


@pytest.mark.slow
def test_one_statistic_materialized_alone_computes_only_it_and_what_it_needs(upstream_repo, tmp_path, monkeypatch):
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9"))}, "one")
    warehouse = tmp_path / "warehouse"
    try:
        definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
        with dg.instance_for_test() as instance:
            assert ingest(definitions, instance).success
            before = data_versions(definitions, instance)
            # Two statistics' SQL changed; the run selects one of them.
            changed_sql(monkeypatch, "statistics/kernel_scorecard")
            changed_sql(monkeypatch, "statistics/comparable_groups")
            definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
            assert {"kernel_scorecard", "comparable_groups"} <= stale(definitions, instance)
            result = run_only(definitions, instance, "kernel_scorecard")
            assert result.success
            assert {event.asset_key.to_user_string() for event in result.get_asset_materialization_events()} == {"kernel_scorecard"}
            assert computed(warehouse) == {"kernel_scorecard"}, "provider_comparisons' key is unchanged: it is copied"
            after = data_versions(definitions, instance)
            assert {name for name in after if after[name] != before[name]} == {"kernel_scorecard"}
            assert "comparable_groups" in stale(definitions, instance), "copied as it was: its new SQL is not run yet"
            assert "kernel_scorecard" not in stale(definitions, instance)
            # The series noise's code changed: version_changes, which reads it, needs both series statistics made again.
            changed_module(monkeypatch, tmp_path, "pipelines.series.series_noise")
            definitions = reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
            assert run_only(definitions, instance, "version_changes").success
            assert computed(warehouse) == {"version_changes", "series_noise", "change_points"}
            assert "comparable_groups" in stale(definitions, instance), "a statistic not selected stays as it was"
    finally:
        monkeypatch.undo()
        reload_definitions(monkeypatch, tmp_path, upstream_repo.path)
