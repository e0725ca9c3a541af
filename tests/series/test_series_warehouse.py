"""series_noise, change_points and version_changes' noise-based verdict, built into warehouse.duckdb from runs written by hand."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from statistics_warehouse import BASELINES, rows, run, write_warehouse

from pipelines.core.layout import Layout
from pipelines.statistics import database_build, db

pytest_plugins = ["statistics_warehouse"]

GPU = "H100"
DRIFTING = [100_000, 104_000, 97_000, 102_000, 99_000, 105_000, 96_000, 101_000, 103_000, 98_000] * 2 + [100_000, 102_000, 99_000, 101_000]


def history(provider: str, levels: list[float], sigma: float, seed: int, *, x: int = 4, kernel: str = "rms_norm") -> list[dict]:
    """One run per weekly commit c0, c1, ... with log-normal noise around each level; p20 = p80 (one run's band says nothing)."""
    rng = random.Random(seed)
    found = []
    for i, level in enumerate(levels):
        value = round(level * math.exp(rng.gauss(0, sigma)))
        row = run(provider, value, kernel=kernel, gpu=GPU, x=("batch", x), observed="2025-01-01T00:00:00+00:00", version="0.1")
        row["observed_at"] = row["observed_at"].replace(day=1 + i % 28, month=1 + i // 28)
        row["run_id"] = f"{kernel}/{provider}/{x}/{i:02d}"
        row["backend"] = "triton"
        row["benchmarked_commit"] = f"c{i:02d}"
        found.append(row)
    return found


@pytest.fixture
def series_warehouse(tmp_path: Path) -> Path:
    runs = [
        # Group batch 4: liger 25% slower from c15, huggingface flat: the code.
        *history("liger", [100_000] * 15 + [125_000] * 10, 0.01, seed=1),
        *history("huggingface", [300_000] * 25, 0.01, seed=2),
        # Group batch 8: liger and huggingface both 40% slower from c15: the host.
        *history("liger", [100_000] * 15 + [140_000] * 10, 0.01, seed=3, x=8),
        *history("huggingface", [300_000] * 15 + [420_000] * 10, 0.01, seed=4, x=8),
        # Group batch 16: torch drifting by 2-9% from run to run, one spike at c10 that comes back.
        *history("torch", [*DRIFTING[:10], 300_000, *DRIFTING[10:]], 0.0, seed=5, x=16),
    ]
    write_warehouse(tmp_path, runs)
    database_build.build_database(tmp_path, BASELINES)
    return tmp_path


def test_a_step_is_one_change_point_with_its_runs_commits_and_cause(series_warehouse: Path):
    points = rows(series_warehouse, "SELECT * FROM change_points ORDER BY workload_slug, provider")
    found = {(p["workload_slug"], p["provider"]): p for p in points}
    assert set(found) == {("batch4-hidden4096", "liger"), ("batch8-hidden4096", "huggingface"), ("batch8-hidden4096", "liger")}
    code = found["batch4-hidden4096", "liger"]
    assert (code["before_run_id"], code["after_run_id"]) == ("rms_norm/liger/4/14", "rms_norm/liger/4/15")
    assert (code["before_commit"], code["after_commit"]) == ("c14", "c15")
    assert (code["verdict"], code["cause"], code["backend"]) == ("regressed", "code", "triton")
    assert code["ratio"] == pytest.approx(0.8, rel=0.03)
    assert code["ratio"] == pytest.approx(code["before_value"] / code["after_value"])
    assert 0.99 < code["confidence"] <= 1
    # The baseline moved by the same factor at the same commit: the host, for liger. huggingface's own step has
    # no second baseline in the group (no torch): liger, the group's other provider, witnesses it, and moved alike
    # (issue 28: a baseline provider can get cause host too).
    assert (found["batch8-hidden4096", "liger"]["cause"], found["batch8-hidden4096", "huggingface"]["cause"]) == ("host", "host")
    # ... while batch 4's huggingface did not move, so liger's step there is the code's.
    assert all(p["status"] == "confirmed" and not p["below_min_effect"] for p in points)
    with db.session(series_warehouse) as reader:
        assert all(outcome.passed for outcome in reader.run_checks())


def test_every_series_has_its_noise(series_warehouse: Path):
    noise = {
        (r["workload_slug"], r["provider"]): r
        for r in rows(series_warehouse, "SELECT * FROM series_noise JOIN comparable_groups USING (group_id)")
    }
    assert len(noise) == 5 and {r["n_points"] for r in noise.values()} == {25}
    # Its consecutive differences are 2% to 9% (median 5%): a run's sigma is 5% x 1.4826 / sqrt(2).
    assert noise["batch16-hidden4096", "torch"]["noise"] == pytest.approx(0.05 * 1.4826 / math.sqrt(2), rel=0.15)
    assert noise["batch4-hidden4096", "huggingface"]["noise"] == pytest.approx(0.01, rel=0.4)
    # Differences, or for a flat 1% series whose newest ten runs happen to spread wider, the window (its IQR / 1.349).
    assert {r["method"] for r in noise.values()} <= {"consecutive", "window"}
    assert all(r["noise"] >= r["window_noise"] for r in noise.values() if r["window_noise"] < 0.016)
    assert noise["batch16-hidden4096", "torch"]["method"] == "consecutive"


def test_a_drift_inside_the_noise_is_unchanged_in_version_changes(series_warehouse: Path):
    torch = rows(
        series_warehouse,
        "SELECT version_changes.*, runs.benchmarked_commit FROM version_changes JOIN runs USING (run_id)"
        " WHERE version_changes.provider = 'torch' ORDER BY runs.observed_at",
    )
    assert list(torch[0])[:3] == ["group_id", "provider", "backend"] and torch[0]["backend"] == "triton"
    verdicts = {row["benchmarked_commit"]: row["verdict"] for row in torch}
    # Every run is "separated" from the one before (p20 = p80), but the noise covers every drift but the spike's.
    assert (verdicts["c10"], verdicts["c11"]) == ("regressed", "improved")
    assert {v for c, v in verdicts.items() if c not in ("c10", "c11")} == {"unchanged"}
    # The same drifts judged by the bands alone would all be changes: the noise is what says unchanged.
    assert all(row["value"] != row["previous_value"] for row in torch)


def test_points_are_ordered_by_their_commit_so_an_old_commit_benchmarked_late_is_a_rerun_in_its_place(tmp_path: Path):
    # liger 25% slower from c15; then c05 is benchmarked again, last (a release rerun of an old commit, as
    # 009401c after 2845fe8 upstream), at the old level. By time it would be the newest point, back at the old
    # level: a candidate improvement. By its commit it is a rerun of c05: one step, confirmed, nothing after it.
    runs = history("liger", [100_000] * 15 + [125_000] * 10, 0.01, seed=1)
    late = dict(runs[5], run_id="rms_norm/liger/4/late", value=101_000, p20=101_000, p80=101_000)
    late["observed_at"] = runs[-1]["observed_at"].replace(day=28)
    write_warehouse(tmp_path, [*runs, late])
    database_build.build_database(tmp_path, BASELINES)
    points = rows(tmp_path, "SELECT after_commit, verdict, status, n_before, n_after FROM change_points")
    assert points == [{"after_commit": "c15", "verdict": "regressed", "status": "confirmed", "n_before": 16, "n_after": 10}]
    (noise,) = rows(tmp_path, "SELECT n_points, n_differences, method FROM series_noise")
    # The late run is direct evidence of the noise: a rerun of c05 (24 consecutive differences, 1 rerun).
    assert (noise["n_points"], noise["n_differences"], noise["method"]) == (26, 25, "reruns+consecutive")


def test_a_step_at_the_newest_commit_is_a_candidate_below_the_minimum_effect_flagged(tmp_path: Path):
    runs = [
        *history("liger", [100_000] * 20 + [160_000], 0.005, seed=7),
        # 3.5% slower from c12: well beyond a 0.5% noise, under the 5% minimum effect.
        *history("liger", [100_000] * 12 + [103_500] * 9, 0.002, seed=8, x=8),
    ]
    write_warehouse(tmp_path, runs)
    database_build.build_database(tmp_path, BASELINES)
    found = {r["workload_slug"]: r for r in rows(tmp_path, "SELECT * FROM change_points")}
    newest, small = found["batch4-hidden4096"], found["batch8-hidden4096"]
    assert (newest["after_commit"], newest["status"], newest["verdict"], newest["n_after"]) == ("c20", "candidate", "regressed", 1)
    assert not newest["below_min_effect"]
    assert (small["after_commit"], small["status"], small["below_min_effect"]) == ("c12", "confirmed", True)
    with db.session(tmp_path) as reader:
        assert all(outcome.passed for outcome in reader.run_checks())


def test_series_not_one_block_of_runs_as_stored_are_read_by_groups_with_the_same_statistics(tmp_path: Path):
    """Run ids that interleave two series (a series is then many blocks of runs as stored) cannot be read in stored
    order: the series are read in ranges of groups, and give what the same runs with ids in blocks give."""
    import duckdb

    from pipelines.series import series_tables

    def layout(folder: Path, interleaved: bool) -> Path:
        runs = [*history("liger", [100_000] * 15 + [125_000] * 10, 0.01, seed=1), *history("huggingface", [300_000] * 25, 0.01, seed=2)]
        if interleaved:
            for row in runs:
                _, provider, x, i = row["run_id"].split("/")
                row["run_id"] = f"rms_norm/{x}/{i}/{provider}"
        folder.mkdir()
        write_warehouse(folder, runs)
        database_build.build_database(folder, BASELINES)
        return folder

    blocks, interleaved = layout(tmp_path / "blocks", False), layout(tmp_path / "interleaved", True)
    for folder, stored in ((blocks, True), (interleaved, False)):
        with duckdb.connect(str(Layout(folder).database)) as con:
            assert (series_tables.stored_ranges(con) is not None) is stored
    noise = "SELECT * FROM series_noise ORDER BY ALL"
    assert rows(interleaved, noise) == rows(blocks, noise)
    steps = "SELECT provider, after_commit, status, verdict, cause FROM change_points ORDER BY ALL"
    assert (
        rows(interleaved, steps)
        == rows(blocks, steps)
        == [{"provider": "liger", "after_commit": "c15", "status": "confirmed", "verdict": "regressed", "cause": "code"}]
    )


def test_points_that_are_not_their_series_blocks_are_an_error_not_wrong_series():
    import numpy as np
    import pyarrow as pa

    from pipelines.series import series_tables

    series = pa.table({"n_points": [2, 1], "series_hash": pa.array([7, 9], pa.uint64())})
    points = pa.table(
        {
            "value": [1.0, 2.0, 3.0],
            "commit": ["a", "b", "c"],
            "row_id": [0, 1, 2],
            "series_hash": pa.array([7, 9, 7], pa.uint64()),  # the first series is two blocks
            "placed_at": [0, 0, 0],
            "observed_at": [0, 0, 0],
        }
    )
    with pytest.raises(RuntimeError, match="not its series' blocks"):
        series_tables._series(series, points)
    # In their blocks, each series' points are put in their order: by place, then time, then rowid.
    ordered = points.set_column(3, "series_hash", pa.array([7, 7, 9], pa.uint64())).set_column(4, "placed_at", pa.array([5, 1, 0]))
    found = series_tables._series(series, ordered)
    assert np.array_equal(found.rows, [1, 0, 2]) and found.commit_names.to_pylist() == ["b", "a", "c"]
