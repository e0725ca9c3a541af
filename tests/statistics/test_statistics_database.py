"""The statistics database of SPEC section 6 on small warehouses written here: its build, tables and views,
run_noise, the checks that catch broken statistics, and the Dagster assets."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest
from conftest import damaged_inside
from statistics_warehouse import BASELINES, by_provider, fixture_runs, rows, sigma, write_warehouse
from test_duckdb_file import bit_rot

from pipelines.core import column_docs, schemas, sql_files
from pipelines.defs.resources import Warehouse
from pipelines.defs.statistics.assets import statistics
from pipelines.statistics import database_build, db
from pipelines.storage import store

pytest_plugins = ["statistics_warehouse"]


# --- the database ---------------------------------------------------------------------------


def test_build_makes_every_table_and_statistic(warehouse_dir: Path) -> None:
    counts = database_build.build_database(warehouse_dir, BASELINES)
    assert set(counts) == set(db.TABLES) | set(db.STATISTICS)
    assert counts["runs"] == len(fixture_runs())
    assert counts["measurements"] == 0
    tables = {row["name"] for row in rows(warehouse_dir, "SELECT name FROM (SHOW TABLES)")}
    assert tables == set(counts) | {"readable_runs", "commit_places", "run_points"}, (
        "the tables, the statistics and the views for readers (sql/views/)"
    )
    assert not list(warehouse_dir.glob(".warehouse.duckdb.*")), "the temporary file is renamed or removed"


def test_build_without_a_table_names_it(tmp_path: Path) -> None:
    write_warehouse(tmp_path, fixture_runs())
    (tmp_path / "quarantine.parquet").unlink()
    with pytest.raises(db.WarehouseMissing, match="quarantine"):
        database_build.build_database(tmp_path, BASELINES)
    assert not db.database_path(tmp_path).exists()
    assert not list(tmp_path.glob(".warehouse.duckdb.*"))


def test_a_table_may_be_a_folder_of_parquet_files(tmp_path: Path) -> None:
    write_warehouse(tmp_path, fixture_runs())
    (tmp_path / "runs.parquet").unlink()
    (tmp_path / "runs").mkdir()
    everything = fixture_runs()
    pl.DataFrame(everything[:10], schema=schemas.RUNS).write_parquet(tmp_path / "runs" / "part-0.parquet")
    pl.DataFrame(everything[10:], schema=schemas.RUNS).write_parquet(tmp_path / "runs" / "part-1.parquet")
    assert database_build.build_database(tmp_path, BASELINES)["runs"] == len(everything)


def test_query_is_read_only(warehouse_dir: Path) -> None:
    with pytest.raises(duckdb.Error, match="read-only"):
        db.query(warehouse_dir, "DELETE FROM runs")


def test_query_without_a_database_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(db.WarehouseMissing, match="materialize"):
        db.query(tmp_path, "SELECT 1")


def test_runs_are_kept_in_run_id_order(warehouse_dir: Path) -> None:
    run_ids = [r["run_id"] for r in fixture_runs()]
    assert run_ids != sorted(run_ids), "the fixture's Parquet is not in run_id order"
    stored = [row["run_id"] for row in rows(warehouse_dir, "SELECT run_id FROM runs ORDER BY rowid")]
    assert stored == sorted(run_ids)


def order_checks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each build's check of runs' order found (True: in run_id order, no sort)."""
    found: list[bool] = []
    check = database_build._runs_in_run_id_order
    monkeypatch.setattr(database_build, "_runs_in_run_id_order", lambda con: found.append(check(con)) or found[-1])
    return found


def runs_in_parts(monkeypatch: pytest.MonkeyPatch, part_rows: int) -> list[int]:
    """runs copied in parts of `part_rows` rows; the list gets the number of parts of each copy."""
    monkeypatch.setattr(database_build, "RUNS_PART_ROWS", part_rows)
    parts = database_build._runs_parts
    counted: list[int] = []
    monkeypatch.setattr(database_build, "_runs_parts", lambda *args: counted.append(len(found := parts(*args))) or found)
    return counted


def test_runs_copied_in_parts_keeps_its_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts committed in the file's order make runs in that order, with no sort after the copy."""
    runs = sorted(fixture_runs(), key=lambda r: r["run_id"])
    write_warehouse(tmp_path / "whole", runs)
    database_build.build_database(tmp_path / "whole", BASELINES)
    in_order = order_checks(monkeypatch)
    counted = runs_in_parts(monkeypatch, len(runs) // 5)
    write_warehouse(tmp_path / "parts", runs)
    database_build.build_database(tmp_path / "parts", BASELINES)
    assert counted == [database_build.RUNS_PARTS] and in_order == [True]
    stored = [row["run_id"] for row in rows(tmp_path / "parts", "SELECT run_id FROM runs ORDER BY rowid")]
    assert stored == [r["run_id"] for r in runs]
    assert statistics_of(tmp_path / "parts") == statistics_of(tmp_path / "whole")


def test_a_runs_file_damaged_inside_is_named_when_copied_in_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every part meets the damage: the build names the file, removes it for the tables' next build, and leaves no
    half-written database."""
    runs = sorted(fixture_runs(), key=lambda r: r["run_id"])
    write_warehouse(tmp_path, runs)
    counted = runs_in_parts(monkeypatch, len(runs) // 5)
    file = tmp_path / "runs.parquet"
    damaged_inside(file)
    with pytest.raises(store.DamagedFile, match="runs.parquet is damaged"):
        database_build.build_database(tmp_path, BASELINES)
    assert counted == [database_build.RUNS_PARTS]
    assert not file.exists(), "removed, so that the tables' next build makes it again"
    assert not db.database_path(tmp_path).exists() and not list(tmp_path.glob(".warehouse.duckdb.*"))


def statistics_of(warehouse_dir: Path) -> dict[str, list[tuple]]:
    return {name: db.query(warehouse_dir, f"SELECT * FROM {name} ORDER BY ALL").rows for name in db.STATISTICS}


def test_statistics_an_earlier_file_holds_are_copied_from_it_with_the_same_rows(
    warehouse_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database_build.build_database(warehouse_dir, BASELINES)
    computed = statistics_of(warehouse_dir)
    earlier = tmp_path / "earlier.duckdb"
    shutil.copy(warehouse_dir / "warehouse.duckdb", earlier)
    reuse = database_build.Reuse(earlier, frozenset({"series_noise", "change_points", "kernel_scorecard", "run_noise"}))
    assert reuse.copied() == {"series_noise", "change_points", "kernel_scorecard"}  # a view is made again, from its SQL

    def not_computed(*args, **kwargs):
        raise AssertionError("computed, not copied")

    original = sql_files.text
    monkeypatch.setattr(database_build.series_tables, "build", not_computed)
    monkeypatch.setattr(
        sql_files, "text", lambda name: "SELECT * FROM computed_not_copied" if name == "statistics/kernel_scorecard" else original(name)
    )
    database_build.build_database(warehouse_dir, BASELINES, reuse=reuse)
    assert statistics_of(warehouse_dir) == computed
    # The series statistics are computed together: one of them alone is computed again.
    assert database_build.Reuse(earlier, frozenset({"change_points"})).copied() == frozenset()
    assert database_build.Reuse(None, frozenset({"kernel_scorecard"})).copied() == frozenset()


def test_statistics_do_not_depend_on_the_order_of_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sorted Parquet takes the fast path (rowid stands for run_id); any other order is sorted first.

    Reversed, the two liger runs of group A that tie on observed_at come in the order opposite to
    their run_ids, which must still decide which one is the latest and which one came before.
    """
    in_order = order_checks(monkeypatch)
    runs = fixture_runs()
    found = {}
    for order, ordered in {
        "fixture": runs,
        "sorted": sorted(runs, key=lambda r: r["run_id"]),
        "reversed": sorted(runs, key=lambda r: r["run_id"], reverse=True),
    }.items():
        write_warehouse(tmp_path / order, ordered)
        database_build.build_database(tmp_path / order, BASELINES)
        found[order] = statistics_of(tmp_path / order)
    assert in_order == [False, True, False]
    assert found["sorted"] == found["fixture"] == found["reversed"]
    liger = by_provider(tmp_path / "reversed", "a-hf-1")["liger"]
    assert liger["run_id"] == "a-liger-2b"


def test_run_noise_is_a_view_of_runs(warehouse_dir: Path) -> None:
    kinds = {
        row["table_name"]: row["table_type"] for row in rows(warehouse_dir, "SELECT table_name, table_type FROM information_schema.tables")
    }
    assert kinds["run_noise"] == "VIEW"
    assert {kinds[name] for name in db.STATISTICS if name != "run_noise"} == {"BASE TABLE"}
    assert not any(name.startswith("latest") for name in kinds), "intermediates are not kept"


def test_readable_runs_is_runs_in_human_units(warehouse_dir: Path) -> None:
    stored = {row["run_id"]: row for row in rows(warehouse_dir, "SELECT run_id, value, p80, unit FROM runs")}
    readable = rows(warehouse_dir, "SELECT run_id, value, p80, unit, first_seen_commit, last_seen_commit FROM readable_runs")
    assert len(readable) == len(stored), "one row per run"
    scale = {"ns": (1e6, "ms"), "bytes": (2**20, "MiB")}
    for row in readable:
        run = stored[row["run_id"]]
        factor, unit = scale.get(run["unit"], (1, run["unit"]))
        assert (row["value"], row["p80"], row["unit"]) == pytest.approx(
            (None if run["value"] is None else run["value"] / factor, None if run["p80"] is None else run["p80"] / factor, unit)
        )


# --- run_noise --------------------------------------------------------------------------------


def test_run_noise_from_p20_and_p80(warehouse_dir: Path) -> None:
    noise = {row["run_id"]: row["sigma_log"] for row in rows(warehouse_dir, "SELECT * FROM run_noise")}
    assert len(noise) == len(fixture_runs()), "one row per run, failed ones too"
    assert noise["a-hf-1"] == pytest.approx(sigma(190, 210))
    assert noise["d-hf"] == 0.0
    assert noise["a-liger-3"] is None, "a failed run has no quantiles"


# --- checks -----------------------------------------------------------------------------------


def test_checks_pass_on_consistent_statistics(warehouse_dir: Path) -> None:
    outcomes = db.run_checks(warehouse_dir)
    assert {(o.check, o.table) for o in outcomes} == {(check, table) for check, tables in db.CHECKS.items() for table in tables}
    assert all(o.passed for o in outcomes), [o for o in outcomes if not o.passed]


def test_checks_catch_broken_statistics(warehouse_dir: Path) -> None:
    with duckdb.connect(str(db.database_path(warehouse_dir))) as con:
        con.execute("UPDATE runs SET gpu_name = 'H100' WHERE run_id = 'a-hf-1'")
        con.execute("UPDATE provider_comparisons SET ratio = 'inf' WHERE run_id = 'a-torch-1'")
        con.execute("UPDATE kernel_scorecard SET wins = wins + 1 WHERE kernel = 'swiglu' AND provider = 'liger'")
    failed = {(o.check, o.table): o.failures for o in db.run_checks(warehouse_dir) if not o.passed}
    assert set(failed) == {
        ("group_runs_consistent", "comparable_groups"),
        ("ratios_positive_finite", "provider_comparisons"),
        ("scorecard_counts_add_up", "kernel_scorecard"),
    }
    assert failed["group_runs_consistent", "comparable_groups"][0]["gpus"] == 2
    assert failed["ratios_positive_finite", "provider_comparisons"][0]["ratio"] == math.inf


# --- Dagster ----------------------------------------------------------------------------------


def statistics_resource(warehouse: Path) -> Warehouse:
    """A warehouse resource for the statistics asset alone (no source is read)."""
    return Warehouse(
        warehouse_dir=str(warehouse),
        source="unused",
        branch="main",
        file_glob="*.csv",
        cache_dir=str(warehouse / "cache"),
        baselines=list(BASELINES),
    )


def test_statistics_assets_materialize_with_checks(tmp_path: Path) -> None:
    write_warehouse(tmp_path, fixture_runs())
    resource = statistics_resource(tmp_path)
    result = dg.materialize([statistics], resources={"warehouse": resource}, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    materialized = {event.asset_key.to_user_string(): event.materialization.metadata for event in result.get_asset_materialization_events()}
    assert set(materialized) == set(db.STATISTICS)
    assert materialized["provider_comparisons"]["dagster/row_count"].value == len(rows(tmp_path, "SELECT * FROM provider_comparisons"))
    schema = materialized["kernel_scorecard"]["dagster/column_schema"].schema
    assert {"geomean_ratio", "wins", "losses", "draws"} <= {column.name for column in schema.columns}
    # Every column of every statistic says what it is in the UI, in the words its comment in the file has.
    assert [
        (name, c.name) for name, m in materialized.items() for c in m["dagster/column_schema"].schema.columns if not c.description
    ] == []
    assert {c.name: c.description for c in schema.columns}["wins"] == column_docs.column_description("kernel_scorecard", "wins")
    preview = materialized["provider_comparisons"]["preview"].value
    assert "| side |" in preview and "| win |" in preview and "| regression |" in preview
    checks = result.get_asset_check_evaluations()
    assert len(checks) == sum(len(tables) for tables in db.CHECKS.values()) + 1, "and database_file_intact"
    assert all(check.passed for check in checks)
    assert all(spec.description for spec in statistics.check_specs)


def test_a_database_damaged_in_place_fails_its_check_and_is_rebuilt(tmp_path: Path) -> None:
    write_warehouse(tmp_path, fixture_runs())
    resource = statistics_resource(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([statistics], resources={"warehouse": resource}, instance=instance).success
    bit_rot(db.database_path(tmp_path))
    result = dg.materialize([statistics], resources={"warehouse": resource}, instance=instance)
    assert result.success
    intact = [check for check in result.get_asset_check_evaluations() if check.check_name == "database_file_intact"]
    assert len(intact) == 1 and not intact[0].passed
    assert str(db.database_path(tmp_path)) in intact[0].description
    assert db.query(tmp_path, "SELECT count(*) FROM runs").rows == [(len(fixture_runs()),)]


def test_statistics_depend_on_the_tables() -> None:
    specs = {spec.key.to_user_string(): spec for spec in statistics.specs}
    assert set(specs) == set(db.STATISTICS)
    deps = {dep.asset_key.to_user_string() for dep in specs["comparable_groups"].deps}
    assert deps == {*db.TABLES, "provider_comparisons"}
    assert all(spec.group_name == "statistics" and spec.description for spec in specs.values())
