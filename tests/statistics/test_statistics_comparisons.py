"""The comparisons of SPEC section 6 on a small warehouse written here, checked against values worked out by
hand: provider_comparisons, comparable_groups, kernel_scorecard, version_changes and sweep_comparisons."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from pathlib import Path

import duckdb
import pytest
from statistics_warehouse import BASELINES, HF_OVER_LIGER, SWEEP_SEQ, by_provider, fixture_runs, group_of, rows, run, sigma, write_warehouse

from pipelines.core import sql_files
from pipelines.series import series_tables
from pipelines.statistics import database_build, db

pytest_plugins = ["statistics_warehouse"]


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


def every_group(warehouse_dir: Path) -> list[tuple]:
    """comparable_groups' rows in one order, to compare two builds of it."""
    with db.session(warehouse_dir) as session:
        return session.con.execute("SELECT * FROM comparable_groups ORDER BY ALL").fetchall()


def test_comparable_groups_that_do_not_fit_in_memory_are_made_by_ranges(warehouse_dir: Path, monkeypatch) -> None:
    """Where DuckDB runs out of memory making comparable_groups at once, it is made one range of groups at a time:
    the same rows, every group once."""
    whole = every_group(warehouse_dir)
    made = database_build.create_table
    ranges_made = []

    def out_of_memory_at_once(con, name, select, params=None):
        if name == "comparable_groups":
            if params == database_build.WHOLE:
                raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")
            ranges_made.append(params)
        made(con, name, select, params)

    cut = series_tables.group_ranges
    cuts = []
    monkeypatch.setattr(database_build, "create_table", out_of_memory_at_once)
    monkeypatch.setattr(series_tables, "RANGE_ROWS", 10)
    monkeypatch.setattr(series_tables, "group_ranges", lambda *args: cuts.append(cut(*args)) or cuts[-1])
    database_build.build_database(warehouse_dir, BASELINES)
    by_ranges = every_group(warehouse_dir)
    ranges = cuts[0]  # the build's; the search for change points cuts its own
    assert len(ranges) > 3, "several ranges of groups"
    assert ranges_made == [ranges[0]], "create_table makes the first range; the rest are inserted"
    assert by_ranges == whole


def test_group_summary_made_by_ranges_gives_the_same_groups(warehouse_dir: Path, monkeypatch) -> None:
    """comparable_groups' group_summary (its medians) is made one range of groups at a time: with ranges of a few
    runs, several of them, the same rows as one range."""
    whole = every_group(warehouse_dir)
    made = database_build._create_temp_table
    ranges_made = []

    def recorded(con, name, select, params=None):
        if name == "group_summary":
            ranges_made.append(params)
        made(con, name, select, params)

    monkeypatch.setattr(database_build, "_create_temp_table", recorded)
    monkeypatch.setattr(series_tables, "RANGE_ROWS", 10)
    database_build.build_database(warehouse_dir, BASELINES)
    by_ranges = every_group(warehouse_dir)
    assert ranges_made and ranges_made[0]["lo"] is None and ranges_made[0]["hi"] is not None, "the first of several ranges"
    assert by_ranges == whole


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


def test_the_geometric_mean_is_the_same_in_any_order_of_rows() -> None:
    """exp(avg(ln)) sums in the order rows come, which the plan and runs' row groups decide: these four ratios give
    two results over their orders. The scorecard's and the sweeps' geometric mean gives one."""
    ratios = [1.74, 1.62, 2.13, 2.47]
    with duckdb.connect() as con:
        con.execute(sql_files.text("macros"))

        def means(expression: str) -> set[float]:
            query = f"SELECT {expression} FROM unnest(?::DOUBLE[]) AS t(ratio)"
            return {con.execute(query, [list(order)]).fetchone()[0] for order in itertools.permutations(ratios)}

        assert len(means("exp(avg(ln(ratio)))")) == 2
        (mean,) = means("ordered_geomean(ratio)")
    assert mean == pytest.approx(math.prod(ratios) ** 0.25)
    for name in ("kernel_scorecard", "sweep_comparisons"):
        assert "ordered_geomean(ratio) AS geomean_ratio" in sql_files.text(f"statistics/{name}")


# --- version_changes --------------------------------------------------------------------------


def test_version_changes_verdicts(warehouse_dir: Path) -> None:
    found = rows(
        warehouse_dir,
        "SELECT * FROM version_changes WHERE group_id = (SELECT group_id FROM runs WHERE run_id = 'a-hf-1')",
    )
    changes = {row["run_id"]: row for row in found}
    # SPEC's columns and backend, nothing more: the rest of a run is a join on run_id away.
    assert list(found[0]) == [
        "group_id",
        "provider",
        "backend",
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


def sorted_runs_spy(monkeypatch) -> list[str]:
    """The names of the SQL files the build reads, in order: whether it sorted runs for version_changes."""
    seen: list[str] = []
    original = sql_files.text
    monkeypatch.setattr(sql_files, "text", lambda name: seen.append(name) or original(name))
    return seen


def test_version_changes_where_runs_as_stored_are_not_in_series_order(tmp_path: Path, monkeypatch) -> None:
    """Run ids that interleave two series, and a series stored newest first: the pass over runs as stored cannot
    see each run's previous one, its count says so, and the rows are made from runs sorted first."""
    seen = sorted_runs_spy(monkeypatch)
    write_warehouse(
        tmp_path,
        [
            run("huggingface", 100, run_id="r1-hf", observed="2024-03-01"),
            run("torch", 150, run_id="r2-torch", observed="2024-02-01"),
            run("huggingface", 200, run_id="r3-hf", observed="2024-01-01"),
            run("torch", 120, run_id="r4-torch", observed="2024-04-01"),
            run("liger", 90, run_id="s1-liger", observed="2024-02-01", x=("batch", 8)),
            run("liger", 80, run_id="s2-liger", observed="2024-01-01", x=("batch", 8)),
        ],
    )
    database_build.build_database(tmp_path, BASELINES)
    found = rows(tmp_path, "SELECT run_id, previous_run_id FROM version_changes ORDER BY run_id")
    assert [(row["run_id"], row["previous_run_id"]) for row in found] == [
        ("r1-hf", "r3-hf"),
        ("r4-torch", "r2-torch"),
        ("s1-liger", "s2-liger"),
    ]
    assert "statistics/version_changes_sorted_runs" in seen
    with db.session(tmp_path) as session:
        assert session.con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone() == (0,)
        assert session.con.execute("SELECT count(*) FROM runs").fetchone() == (6,), "the stored runs are kept"


def test_version_changes_in_series_order_need_no_sort(warehouse_dir: Path, monkeypatch) -> None:
    """The fixture's run ids hold each series in time order: one pass, no sort, and the same rows as runs sorted
    first (the count made to disagree) gives."""
    seen = sorted_runs_spy(monkeypatch)
    database_build.build_database(warehouse_dir, BASELINES)
    assert "statistics/version_changes_sorted_runs" not in seen
    with db.session(warehouse_dir) as session:
        in_one_pass = session.con.execute("SELECT * FROM version_changes ORDER BY ALL").fetchall()
    assert len(in_one_pass) == 4, "the fixture's four changes (test_version_changes_verdicts)"
    original = sql_files.text
    monkeypatch.setattr(sql_files, "text", lambda name: "SELECT -1" if name == "statistics/version_changes_rows" else original(name))
    database_build.build_database(warehouse_dir, BASELINES)
    assert "statistics/version_changes_sorted_runs" in seen
    with db.session(warehouse_dir) as session:
        assert session.con.execute("SELECT * FROM version_changes ORDER BY ALL").fetchall() == in_one_pass


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


def test_a_sweep_of_runs_without_a_backend_is_compared(tmp_path: Path) -> None:
    """An implementation is its provider and backend, and runs written with none are one implementation of their
    own: their sweep is paired with its baseline's points as any other (each latest run found by its key)."""
    write_warehouse(
        tmp_path,
        [
            run(provider, ms * 1_000_000, x=("seq", seq), backend=None)
            for seq, (liger_ms, hf_ms) in {128: (1.0, 2.0), 256: (2.0, 3.0)}.items()
            for provider, ms in (("liger", liger_ms), ("huggingface", hf_ms))
        ],
    )
    database_build.build_database(tmp_path, BASELINES)
    liger = sweeps(tmp_path, "rms_norm")["liger", "huggingface"]
    assert (liger["backend"], liger["baseline_backend"], liger["x_values"]) == (None, None, ["128", "256"])
    assert liger["ratios"] == pytest.approx([2.0, 1.5])


@pytest.mark.parametrize(
    ("better", "worse", "expected"),
    [(8, 0, 2 / 256), (0, 8, 2 / 256), (7, 1, 2 * 9 / 256), (4, 4, 1.0), (1, 0, 1.0), (0, 0, None)],
)
def test_sign_test(warehouse_dir: Path, better: int, worse: int, expected: float | None) -> None:
    (p,) = db.query(warehouse_dir, "SELECT sign_test_p(?, ?)", [better, worse]).rows[0]
    assert p == (None if expected is None else pytest.approx(expected, rel=1e-12))
