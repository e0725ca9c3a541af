"""The statistics of SPEC section 6 on small warehouses written here, checked against values worked out by hand."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from pipelines.__main__ import main
from pipelines.cli import cli_queries
from pipelines.core import canonical, schemas, settings, workload
from pipelines.defs.resources import Warehouse
from pipelines.defs.statistics.assets import statistics
from pipelines.duck import database_build, db

BASELINES = ("huggingface", "torch")
MIB = 2**20


def run(
    provider: str,
    value: float | None,
    *,
    run_id: str | None = None,
    kernel: str = "rms_norm",
    pass_: str = "full",
    metric: str = "speed",
    unit: str | None = None,
    gpu: str = "A100",
    x: tuple[str, int] = ("batch", 4),
    fixed: dict | None = None,
    observed: str = "2024-02-01",
    interval: tuple[float, float] | None = None,
    status: str = "passed",
    version: str = "0.2",
) -> dict:
    """One run row; p20 = p80 = value (no noise) unless `interval` says otherwise."""
    fixed = {"hidden": 4096} if fixed is None else fixed
    x_key, x_value = x
    params = {**fixed, x_key: x_value}
    slug = workload.workload_slug(params)
    workload_digest = canonical.digest(params)
    p20, p80 = interval or (value, value)
    unit = unit or {"speed": "ns", "memory": "bytes"}[metric]
    return {
        "run_id": run_id or f"{kernel}/{pass_}/{metric}/{provider}/{gpu}/{slug}/{observed}",
        "kernel": kernel,
        "provider": provider,
        "pass": pass_,
        "metric": metric,
        "status": status,
        "observed_at": dt.datetime.fromisoformat(observed).replace(tzinfo=dt.UTC),
        "liger_version": version,
        "gpu_name": gpu,
        "x_name": x_key,
        "x_value": str(x_value),
        "workload": canonical.canonical_json(params),
        "workload_slug": slug,
        "workload_digest": workload_digest,
        "protocol_digest": f"protocol-{metric}-{pass_}",
        "environment_digest": f"environment-{gpu}",
        "group_id": canonical.digest([kernel, workload_digest, pass_, metric, gpu]),
        "value": None if status == "failed" else value,
        "p20": None if status == "failed" else p20,
        "p80": None if status == "failed" else p80,
        "unit": unit,
        "x_key": x_key,
        "sweep_workload": canonical.canonical_json(fixed),
        "sweep_digest": canonical.digest(fixed),
    }


SWEEP_SEQ = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
HF_OVER_LIGER = (1.25, 1.6, 2.0, 2.5, 1.25, 1.6, 2.0, 2.5)  # product 10 per half: geomean 10 ** 0.25
SWIGLU = {"kernel": "swiglu", "pass_": "forward", "gpu": "H100", "fixed": {"batch": 2}, "observed": "2024-05-01"}


def fixture_runs() -> list[dict]:
    runs = [
        # Group A (batch 4): two huggingface runs, torch, liger with a tie on observed_at and a later failure.
        run("huggingface", 200, run_id="a-hf-1", observed="2024-01-01", interval=(190, 210), version="0.1"),
        run("huggingface", 180, run_id="a-hf-2", interval=(175, 185)),
        run("torch", 120, run_id="a-torch-0", observed="2024-01-01", interval=(119, 121), version="0.1"),
        run("torch", 150, run_id="a-torch-1", interval=(145, 155)),
        run("liger", 120, run_id="a-liger-1", observed="2024-01-15", interval=(118, 122), version="0.1"),
        run("liger", 110, run_id="a-liger-2a", interval=(108, 121)),
        run("liger", 100, run_id="a-liger-2b", interval=(98, 102)),
        run("liger", None, run_id="a-liger-3", observed="2024-03-01", status="failed", version="0.3"),
        # Group B (batch 8): huggingface only failed, so torch is the baseline; liger ties it.
        run("huggingface", None, run_id="b-hf", x=("batch", 8), status="failed"),
        run("torch", 300, run_id="b-torch", x=("batch", 8), interval=(290, 310)),
        run("liger", 300, run_id="b-liger", x=("batch", 8), interval=(295, 305)),
        # Group C (batch 16): no baseline provider at all.
        run("liger", 50, run_id="c-liger", x=("batch", 16), interval=(49, 51)),
        run("triton", 60, run_id="c-triton", x=("batch", 16), interval=(59, 61)),
        # Group D (batch 32): huggingface alone, its own baseline.
        run("huggingface", 500, run_id="d-hf", x=("batch", 32)),
        # Group E (batch 64): nothing but a failed run.
        run("liger", None, run_id="e-liger", x=("batch", 64), status="failed"),
        # A metric of unknown direction: no ratio.
        run("huggingface", 10, run_id="t-hf", metric="throughput", unit="tokens/s", interval=(9, 11)),
        run("liger", 20, run_id="t-liger", metric="throughput", unit="tokens/s", interval=(19, 21)),
        # Memory: 2 MiB against 1 MiB.
        run("huggingface", 2 * MIB, metric="memory", x=("seq", 128), **SWIGLU),
        run("liger", 1 * MIB, metric="memory", x=("seq", 128), **SWIGLU),
    ]
    # A sweep over seq: liger faster than huggingface at all 8 points; torch slower at one, equal at one.
    for seq, hf_ratio in zip(SWEEP_SEQ, HF_OVER_LIGER, strict=True):
        runs.append(run("liger", 1_000_000, x=("seq", seq), **SWIGLU))
        runs.append(run("huggingface", 1_000_000 * hf_ratio, x=("seq", seq), **SWIGLU))
    runs.append(run("torch", 2_500_000, x=("seq", 128), **SWIGLU))
    runs.append(run("torch", 1_600_000, x=("seq", 256), **SWIGLU))
    return runs


def write_warehouse(warehouse_dir: Path, runs: list[dict]) -> None:
    warehouse_dir.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(runs, schema=schemas.RUNS).write_parquet(warehouse_dir / "runs.parquet")
    for table, schema in schemas.TABLES.items():
        if table != "runs":
            pl.DataFrame(schema=schema).write_parquet(warehouse_dir / f"{table}.parquet")


@pytest.fixture
def warehouse_dir(tmp_path: Path) -> Path:
    write_warehouse(tmp_path, fixture_runs())
    database_build.build_database(tmp_path, BASELINES)
    return tmp_path


def rows(warehouse_dir: Path, sql: str, params=None) -> list[dict]:
    return db.query(warehouse_dir, sql, params).records()


def by_provider(warehouse_dir: Path, group_run_id: str) -> dict[str, dict]:
    """provider_comparisons of the group holding `group_run_id`, keyed by provider."""
    found = rows(
        warehouse_dir,
        "SELECT * FROM provider_comparisons WHERE group_id = (SELECT group_id FROM runs WHERE run_id = ?)",
        [group_run_id],
    )
    return {row["provider"]: row for row in found}


def group_of(warehouse_dir: Path, group_run_id: str) -> dict | None:
    found = rows(
        warehouse_dir,
        "SELECT * FROM comparable_groups WHERE group_id = (SELECT group_id FROM runs WHERE run_id = ?)",
        [group_run_id],
    )
    return found[0] if found else None


def sigma(p20: float, p80: float) -> float:
    return (math.log(p80) - math.log(p20)) / 1.683


# --- the database ---------------------------------------------------------------------------


def test_build_makes_every_table_and_statistic(warehouse_dir: Path) -> None:
    counts = database_build.build_database(warehouse_dir, BASELINES)
    assert set(counts) == set(db.TABLES) | set(db.STATISTICS)
    assert counts["runs"] == len(fixture_runs())
    assert counts["measurements"] == 0
    tables = {row["name"] for row in rows(warehouse_dir, "SELECT name FROM (SHOW TABLES)")}
    assert tables == set(counts) | {"readable_runs"}, "the tables, the statistics and the views for readers (sql/views/)"
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


def statistics_of(warehouse_dir: Path) -> dict[str, list[tuple]]:
    return {name: db.query(warehouse_dir, f"SELECT * FROM {name} ORDER BY ALL").rows for name in db.STATISTICS}


def test_statistics_do_not_depend_on_the_order_of_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sorted Parquet takes the fast path (rowid stands for run_id); any other order is sorted first.

    Reversed, the two liger runs of group A that tie on observed_at come in the order opposite to
    their run_ids, which must still decide which one is the latest and which one came before.
    """
    in_order: list[bool] = []
    check = database_build._runs_in_run_id_order
    monkeypatch.setattr(database_build, "_runs_in_run_id_order", lambda con: in_order.append(check(con)) or in_order[-1])
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


# --- provider_comparisons ---------------------------------------------------------------------


def test_latest_run_against_the_first_baseline(warehouse_dir: Path) -> None:
    group = by_provider(warehouse_dir, "a-hf-1")
    assert set(group) == {"huggingface", "torch", "liger"}
    # The latest liger run: a-liger-2a and a-liger-2b tie on observed_at, the greater run_id wins,
    # and the later failed a-liger-3 does not count.
    liger = group["liger"]
    assert (liger["run_id"], liger["value"], liger["p20"], liger["p80"]) == ("a-liger-2b", 100, 98, 102)
    assert liger["baseline_provider"] == "huggingface"
    assert (liger["baseline_run_id"], liger["baseline_value"]) == ("a-hf-2", 180)
    assert liger["ratio"] == pytest.approx(180 / 100)
    assert liger["separated"] is True
    assert liger["noise"] == "separated"
    assert group["torch"]["ratio"] == pytest.approx(180 / 150)
    assert group["torch"]["separated"] is True  # [145, 155] is below [175, 185]
    assert [group[p]["rank"] for p in ("liger", "torch", "huggingface")] == [1, 2, 3]


def test_the_baseline_row(warehouse_dir: Path) -> None:
    hf = by_provider(warehouse_dir, "a-hf-1")["huggingface"]
    assert (hf["ratio"], hf["separated"], hf["within_noise"], hf["noise"]) == (1.0, None, None, "baseline")


def test_a_provider_alone_is_its_own_baseline(warehouse_dir: Path) -> None:
    (hf,) = by_provider(warehouse_dir, "d-hf").values()
    assert (hf["baseline_provider"], hf["ratio"], hf["separated"], hf["rank"]) == ("huggingface", 1.0, None, 1)


def test_failed_baseline_runs_do_not_make_a_baseline(warehouse_dir: Path) -> None:
    group = by_provider(warehouse_dir, "b-torch")
    assert set(group) == {"torch", "liger"}, "huggingface's only run failed"
    liger = group["liger"]
    assert liger["baseline_provider"] == "torch"
    assert liger["ratio"] == 1.0
    assert liger["separated"] is False  # [295, 305] inside [290, 310]
    assert liger["within_noise"] is True
    assert liger["noise"] == "within noise"
    assert liger["noise_sigma_log"] == pytest.approx(math.hypot(sigma(295, 305), sigma(290, 310)))
    assert group["torch"]["rank"] == group["liger"]["rank"] == 1, "equal values share a rank"


def test_a_group_without_a_baseline_has_null_ratios(warehouse_dir: Path) -> None:
    group = by_provider(warehouse_dir, "c-liger")
    for row in group.values():
        assert (row["baseline_provider"], row["baseline_value"], row["ratio"], row["separated"]) == (None,) * 4
        assert row["noise"] == "no baseline"
    assert (group["liger"]["rank"], group["triton"]["rank"]) == (1, 2)


def test_a_group_of_failed_runs_has_no_rows(warehouse_dir: Path) -> None:
    assert by_provider(warehouse_dir, "e-liger") == {}
    assert group_of(warehouse_dir, "e-liger") is None


def test_a_metric_of_unknown_direction_has_no_ratio(warehouse_dir: Path) -> None:
    liger = by_provider(warehouse_dir, "t-liger")["liger"]
    assert liger["baseline_provider"] == "huggingface"
    assert liger["ratio"] is None
    assert liger["separated"] is True  # [19, 21] above [9, 11]
    assert rows(warehouse_dir, "SELECT * FROM kernel_scorecard WHERE metric = 'throughput'") == []


def test_the_baseline_list_is_configuration(tmp_path: Path) -> None:
    write_warehouse(tmp_path, fixture_runs())
    database_build.build_database(tmp_path, ["torch", "huggingface"])
    liger = by_provider(tmp_path, "a-hf-1")["liger"]
    assert (liger["baseline_provider"], liger["ratio"]) == ("torch", pytest.approx(150 / 100))
    database_build.build_database(tmp_path, [])
    assert by_provider(tmp_path, "a-hf-1")["liger"]["ratio"] is None


def test_a_provider_name_cannot_inject_sql(tmp_path: Path) -> None:
    write_warehouse(tmp_path, fixture_runs())
    database_build.build_database(tmp_path, ["x'); DROP TABLE runs; --", "huggingface"])
    assert by_provider(tmp_path, "a-hf-1")["liger"]["baseline_provider"] == "huggingface"


# --- comparable_groups ------------------------------------------------------------------------


def test_comparable_group_counts_only_passed_runs(warehouse_dir: Path) -> None:
    group = group_of(warehouse_dir, "a-hf-1")
    assert (group["kernel"], group["pass"], group["metric"], group["gpu_name"]) == ("rms_norm", "full", "speed", "A100")
    assert group["workload_slug"] == "batch4-hidden4096"
    assert (group["n_runs"], group["n_providers"], group["n_versions"]) == (7, 3, 2)
    assert group["first_observed"] == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert group["last_observed"] == dt.datetime(2024, 2, 1, tzinfo=dt.UTC), "the failed run of March is not counted"
    # 100, 110, 120, 120, 150, 180, 200
    assert (group["min_value"], group["median_value"], group["max_value"]) == (100, 120, 200)
    assert group["unit"] == "ns"
    assert (group["baseline_provider"], group["best_provider"], group["best_value"]) == ("huggingface", "liger", 100)
    assert group["best_ratio"] == pytest.approx(1.8)


def test_comparable_group_ties_and_even_median(warehouse_dir: Path) -> None:
    tie = group_of(warehouse_dir, "b-torch")
    # A tie goes to the provider whose name sorts first.
    assert (tie["best_provider"], tie["best_value"], tie["best_ratio"]) == ("liger", 300, 1.0)
    assert tie["n_runs"] == 2
    no_baseline = group_of(warehouse_dir, "c-liger")
    assert no_baseline["median_value"] == 55, "the mean of 50 and 60"
    assert (no_baseline["baseline_provider"], no_baseline["best_provider"], no_baseline["best_ratio"]) == (
        None,
        "liger",
        None,
    )


# --- kernel_scorecard -------------------------------------------------------------------------


def scorecard(warehouse_dir: Path, kernel: str) -> dict[tuple[str, str], dict]:
    found = rows(warehouse_dir, "SELECT * FROM kernel_scorecard WHERE kernel = ? AND metric = 'speed'", [kernel])
    return {(row["provider"], row["baseline_provider"]): row for row in found}


def test_scorecard_over_groups_with_another_baseline(warehouse_dir: Path) -> None:
    card = scorecard(warehouse_dir, "rms_norm")
    # huggingface is every group's own baseline or has none; triton has no baseline.
    assert set(card) == {("liger", "huggingface"), ("liger", "torch"), ("torch", "huggingface")}
    assert {k: (r["n_groups"], r["geomean_ratio"], r["wins"], r["losses"], r["draws"]) for k, r in card.items()} == {
        ("liger", "huggingface"): (1, pytest.approx(1.8), 1, 0, 0),
        ("liger", "torch"): (1, 1.0, 0, 0, 1),
        ("torch", "huggingface"): (1, pytest.approx(1.2), 1, 0, 0),
    }


def test_scorecard_geomean_wins_losses_and_draws(warehouse_dir: Path) -> None:
    card = scorecard(warehouse_dir, "swiglu")
    liger = card["liger", "huggingface"]
    assert (liger["n_groups"], liger["wins"], liger["losses"], liger["draws"]) == (8, 8, 0, 0)
    assert liger["geomean_ratio"] == pytest.approx(10**0.25)
    assert (liger["min_ratio"], liger["max_ratio"]) == (pytest.approx(1.25), pytest.approx(2.5))
    torch = card["torch", "huggingface"]
    # seq 128: 1.25 ms / 2.5 ms = 0.5, separated (a loss); seq 256: 1.6 / 1.6 = 1 (a draw).
    assert (torch["n_groups"], torch["wins"], torch["losses"], torch["draws"]) == (2, 0, 1, 1)
    assert torch["geomean_ratio"] == pytest.approx(math.sqrt(0.5))
    assert (torch["gpu_name"], torch["pass"]) == ("H100", "forward")


# --- version_changes --------------------------------------------------------------------------


def test_version_changes_verdicts(warehouse_dir: Path) -> None:
    found = rows(
        warehouse_dir,
        "SELECT * FROM version_changes WHERE group_id = (SELECT group_id FROM runs WHERE run_id = 'a-hf-1')",
    )
    changes = {row["run_id"]: row for row in found}
    # SPEC's columns, nothing more: the rest of a run is a join on run_id away.
    assert list(found[0]) == [
        "group_id",
        "provider",
        "run_id",
        "previous_run_id",
        "liger_version",
        "previous_liger_version",
        "value",
        "previous_value",
        "ratio",
        "verdict",
    ]
    # First runs of a provider have no row; the failed a-liger-3 is not a run here.
    assert set(changes) == {"a-hf-2", "a-torch-1", "a-liger-2a", "a-liger-2b"}
    hf = changes["a-hf-2"]
    assert (hf["previous_run_id"], hf["previous_liger_version"], hf["liger_version"]) == ("a-hf-1", "0.1", "0.2")
    assert (hf["ratio"], hf["verdict"]) == (pytest.approx(200 / 180), "improved")
    torch = changes["a-torch-1"]
    # Separated (p20-p80 apart) and slower.
    assert (torch["ratio"], torch["verdict"]) == (pytest.approx(120 / 150), "regressed")
    # Ordered by (observed_at, run_id): 1 -> 2a -> 2b.
    assert changes["a-liger-2a"]["previous_run_id"] == "a-liger-1"
    # Intervals overlap: unchanged, whatever the ratio.
    assert changes["a-liger-2a"]["verdict"] == "unchanged"
    assert changes["a-liger-2b"]["previous_run_id"] == "a-liger-2a"
    assert (changes["a-liger-2b"]["ratio"], changes["a-liger-2b"]["verdict"]) == (pytest.approx(1.1), "improved")


# --- sweep_comparisons ------------------------------------------------------------------------


def sweeps(warehouse_dir: Path, kernel: str) -> dict[tuple[str, str], dict]:
    found = rows(warehouse_dir, "SELECT * FROM sweep_comparisons WHERE kernel = ? AND metric = 'speed'", [kernel])
    return {(row["provider"], row["baseline_provider"]): row for row in found}


def test_sweep_faster_at_every_point(warehouse_dir: Path) -> None:
    liger = sweeps(warehouse_dir, "swiglu")["liger", "huggingface"]
    assert (liger["x_key"], liger["sweep_workload"]) == ("seq", '{"batch":2}')
    assert (liger["n_points"], liger["n_better"], liger["n_worse"], liger["n_ties"]) == (8, 8, 0, 0)
    assert liger["geomean_ratio"] == pytest.approx(10**0.25)
    assert liger["sign_test_p"] == pytest.approx(2 / 2**8, rel=1e-12)  # 0.0078125
    assert liger["x_values"] == [str(seq) for seq in SWEEP_SEQ], "x in numeric order, not text order"
    assert liger["ratios"] == pytest.approx(list(HF_OVER_LIGER))


def test_sweep_with_a_tie_and_a_loss(warehouse_dir: Path) -> None:
    torch = sweeps(warehouse_dir, "swiglu")["torch", "huggingface"]
    assert (torch["n_points"], torch["n_better"], torch["n_worse"], torch["n_ties"]) == (2, 0, 1, 1)
    assert torch["sign_test_p"] == 1.0, "the tie is left out: 0 of 1"
    assert torch["geomean_ratio"] == pytest.approx(math.sqrt(0.5))


def test_sweep_points_go_to_their_own_baseline(warehouse_dir: Path) -> None:
    found = sweeps(warehouse_dir, "rms_norm")
    assert set(found) == {("liger", "huggingface"), ("liger", "torch"), ("torch", "huggingface")}
    assert found["liger", "huggingface"]["x_values"] == ["4"]
    only_tie = found["liger", "torch"]
    assert (only_tie["x_values"], only_tie["n_ties"], only_tie["sign_test_p"]) == (["8"], 1, None)


@pytest.mark.parametrize(
    ("better", "worse", "expected"),
    [(8, 0, 2 / 256), (0, 8, 2 / 256), (7, 1, 2 * 9 / 256), (4, 4, 1.0), (1, 0, 1.0), (0, 0, None)],
)
def test_sign_test(warehouse_dir: Path, better: int, worse: int, expected: float | None) -> None:
    (p,) = db.query(warehouse_dir, "SELECT sign_test_p(?, ?)", [better, worse]).rows[0]
    assert p == (None if expected is None else pytest.approx(expected, rel=1e-12))


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


# --- compare and the CLI ----------------------------------------------------------------------


def test_compare_in_human_units(warehouse_dir: Path) -> None:
    found = cli_queries.compare(warehouse_dir, "swiglu", "H100", metric="speed")
    assert len(found) == 8 * 2 + 2
    first = found[:3]  # seq 128, best first
    assert [(r["x_value"], r["provider"], r["value"], r["unit"], r["noise"]) for r in first] == [
        ("128", "liger", 1.0, "ms", "separated"),
        ("128", "huggingface", 1.25, "ms", "baseline"),
        ("128", "torch", 2.5, "ms", "separated"),
    ]
    assert [r["ratio"] for r in first] == pytest.approx([1.25, 1.0, 0.5])
    assert [r["x_value"] for r in found][-2:] == ["16384", "16384"], "workloads in numeric x order"
    memory = cli_queries.compare(warehouse_dir, "swiglu", "H100", metric="memory")
    assert [(r["provider"], r["value"], r["unit"], r["ratio"]) for r in memory] == [
        ("liger", 1.0, "MiB", 2.0),
        ("huggingface", 2.0, "MiB", 1.0),
    ]


def test_compare_provider_filter_keeps_the_baseline(warehouse_dir: Path) -> None:
    found = cli_queries.compare(warehouse_dir, "swiglu", "H100", pass_="forward", metric="speed", providers=["torch"])
    assert [(r["x_value"], r["provider"]) for r in found] == [
        ("128", "huggingface"),
        ("128", "torch"),
        ("256", "huggingface"),
        ("256", "torch"),
    ]
    assert cli_queries.compare(warehouse_dir, "swiglu", "H100", pass_="full") == []


def cli(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pipelines")
    subparsers = parser.add_subparsers(dest="command", required=True)
    cli_queries.add_sql_parser(subparsers)
    cli_queries.add_compare_parser(subparsers)
    return parser.parse_args(argv)


def test_compare_command_prints_workload_blocks(warehouse_dir: Path, capsys: pytest.CaptureFixture) -> None:
    args = cli("compare", "--kernel", "swiglu", "--gpu", "H100", "--metric", "speed", "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 0
    out = capsys.readouterr().out
    header, *blocks = out.split("\n\n")
    assert header.startswith("swiglu on H100:")
    first_block = blocks[0].splitlines()
    assert first_block[0] == "batch2-seq128  (forward, speed; seq = 128; unit ms)"
    assert first_block[1].split() == ["provider", "value", "p20..p80", "ratio", "noise", "version", "observed", "(UTC)"]
    assert first_block[3].split() == ["liger", "1", "1..1", "1.250", "separated", "0.2", "2024-05-01", "00:00:00"]
    assert first_block[4].split()[:5] == ["huggingface", "1.25", "1.25..1.25", "1.000", "baseline"]
    assert len(blocks) == 8, "one block per workload"


def test_compare_command_suggests_gpus(warehouse_dir: Path, capsys: pytest.CaptureFixture) -> None:
    args = cli("compare", "--kernel", "swiglu", "--gpu", "A100", "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 1
    assert "GPUs with swiglu: H100" in capsys.readouterr().err


def test_sql_command_formats(warehouse_dir: Path, capsys: pytest.CaptureFixture) -> None:
    query = "SELECT provider, ratio, separated FROM provider_comparisons WHERE run_id IN ('a-liger-2b', 'c-liger') ORDER BY run_id"
    args = cli("sql", query, "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 0
    assert capsys.readouterr().out.splitlines() == [
        "provider  ratio  separated",
        "--------  -----  ---------",
        "liger       1.8  true",
        "liger      NULL  NULL",
        "(2 rows)",
    ]
    args = cli("sql", query, "--format", "csv", "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 0
    assert capsys.readouterr().out.splitlines() == ["provider,ratio,separated", "liger,1.8,True", "liger,,"]
    args = cli("sql", query, "-f", "json", "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"provider": "liger", "ratio": pytest.approx(1.8), "separated": True},
        {"provider": "liger", "ratio": None, "separated": None},
    ]


def test_sql_command_reports_errors(warehouse_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["sql", "SELECT nope FROM runs", "--warehouse-dir", str(warehouse_dir)]) == 1
    assert "nope" in capsys.readouterr().err


def test_table_format_caps_rows() -> None:
    result = db.Result(columns=["n"], types=["INTEGER"], rows=[(i,) for i in range(5)])
    assert cli_queries.format_table(result, max_rows=2).splitlines()[-1] == ("(5 rows, 3 not shown: raise --max-rows or use --format csv)")


# --- readers never block a build -------------------------------------------------------------

SQL_IN_A_SUBPROCESS = """
import argparse, sys
from pipelines.cli import cli_queries
parser = argparse.ArgumentParser()
cli_queries.add_sql_parser(parser.add_subparsers())
args = parser.parse_args(sys.argv[1:])
sys.exit(args.func(args))
"""


def test_sql_works_while_a_build_is_running(warehouse_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    count_runs = "SELECT count(*) AS n FROM runs"
    before = len(fixture_runs())
    write_warehouse(warehouse_dir, [*fixture_runs(), run("liger", 70, run_id="new-run", x=("batch", 128))])

    building, release = threading.Event(), threading.Event()
    create_statistics = database_build._create_statistics

    def paused_create_statistics(con, baselines):
        building.set()
        assert release.wait(timeout=60)
        create_statistics(con, baselines)

    monkeypatch.setattr(database_build, "_create_statistics", paused_create_statistics)
    outcome: dict = {}

    def rebuild() -> None:
        try:
            outcome["counts"] = database_build.build_database(warehouse_dir, BASELINES)
        except BaseException as exc:  # handed to the test thread
            outcome["error"] = exc

    with db.open_readonly(warehouse_dir) as held:
        assert held.execute(count_runs).fetchone() == (before,)
        builder = threading.Thread(target=rebuild)
        builder.start()
        try:
            assert building.wait(timeout=60), "the build never started"
            # Mid-build: a reader in this process and the sql command in another both see the old database.
            assert db.query(warehouse_dir, count_runs).rows == [(before,)]
            sql_command = ["sql", count_runs, "--format", "csv", "--warehouse-dir", str(warehouse_dir)]
            command = subprocess.run(
                [sys.executable, "-c", SQL_IN_A_SUBPROCESS, *sql_command],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=settings.PROJECT_ROOT,
            )
            assert command.returncode == 0, command.stderr
            assert command.stdout.splitlines() == ["n", str(before)]
        finally:
            release.set()
            builder.join(timeout=120)
        assert "error" not in outcome, outcome.get("error")
        assert outcome["counts"]["runs"] == before + 1
        # The connection held through the swap still reads its (old) file.
        assert held.execute(count_runs).fetchone() == (before,)
    assert db.query(warehouse_dir, count_runs).rows == [(before + 1,)]


# --- Dagster ----------------------------------------------------------------------------------


def test_statistics_assets_materialize_with_checks(tmp_path: Path) -> None:
    write_warehouse(tmp_path, fixture_runs())
    resource = Warehouse(
        warehouse_dir=str(tmp_path),
        source="unused",
        branch="main",
        file_glob="*.csv",
        cache_dir=str(tmp_path / "cache"),
        baselines=list(BASELINES),
    )
    result = dg.materialize([statistics], resources={"warehouse": resource}, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    materialized = {event.asset_key.to_user_string(): event.materialization.metadata for event in result.get_asset_materialization_events()}
    assert set(materialized) == set(db.STATISTICS)
    assert materialized["provider_comparisons"]["dagster/row_count"].value == len(rows(tmp_path, "SELECT * FROM provider_comparisons"))
    schema = materialized["kernel_scorecard"]["dagster/column_schema"].schema
    assert {"geomean_ratio", "wins", "losses", "draws"} <= {column.name for column in schema.columns}
    preview = materialized["provider_comparisons"]["preview"].value
    assert "| side |" in preview and "| win |" in preview and "| regression |" in preview
    checks = result.get_asset_check_evaluations()
    assert len(checks) == sum(len(tables) for tables in db.CHECKS.values())
    assert all(check.passed for check in checks)


def test_statistics_depend_on_the_tables() -> None:
    specs = {spec.key.to_user_string(): spec for spec in statistics.specs}
    assert set(specs) == set(db.STATISTICS)
    deps = {dep.asset_key.to_user_string() for dep in specs["comparable_groups"].deps}
    assert deps == {*db.TABLES, "provider_comparisons"}
    assert all(spec.group_name == "statistics" and spec.description for spec in specs.values())
