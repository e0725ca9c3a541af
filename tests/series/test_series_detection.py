"""Series noise, change points and their cause (pipelines/series) on synthetic series whose truth is known."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from pipelines.series import cause, change_points
from pipelines.series import series_noise as noise


def noisy(levels: list[float], sigma: float, seed: int = 1) -> list[float]:
    """Each level times log-normal noise of the given sigma (of ln value)."""
    rng = random.Random(seed)
    return [level * math.exp(rng.gauss(0, sigma)) for level in levels]


def flat_noise(values: list[float]) -> float:
    return noise.series_noises([("s", "pool", "metric", [math.log(v) for v in values], [str(i) for i in range(len(values))])])["s"].noise


def test_a_clean_step_is_found_at_its_index_and_in_its_direction():
    values = noisy([100.0] * 15 + [125.0] * 12, sigma=0.02)
    steps = change_points.detect(values, flat_noise(values))
    assert [(s.before, s.after) for s in steps] == [(14, 15)]
    (step,) = steps
    # Slower: the ratio before / after is below 1, close to 100 / 125.
    assert step.ratio == pytest.approx(0.8, rel=0.05)
    assert step.before_value == pytest.approx(100, rel=0.03) and step.after_value == pytest.approx(125, rel=0.03)
    assert step.confidence == 1.0  # every run after is slower than every run before


def test_a_faster_step_with_only_two_points_after_it_is_persistent():
    values = noisy([50.0] * 20 + [40.0] * 2, sigma=0.01, seed=3)
    (step,) = change_points.detect(values, flat_noise(values))
    assert (step.after, step.ratio > 1) == (20, True)


def test_one_newest_point_away_is_a_candidate_step():
    values = noisy([50.0] * 20 + [40.0], sigma=0.01, seed=3)
    (step,) = change_points.detect(values, flat_noise(values))
    assert (step.after, step.status, step.ratio > 1) == (20, "candidate", True)


def test_the_next_runs_confirm_a_candidate_or_refute_it():
    base = [50.0] * 20
    two_after = noisy(base + [40.0] * 2, sigma=0.01, seed=3)
    confirmed = noisy(base + [40.0] * 3, sigma=0.01, seed=3)
    refuted = noisy(base + [40.0, 50.0], sigma=0.01, seed=3)
    assert [s.status for s in change_points.detect(two_after, 0.01)] == ["candidate"]
    assert [s.status for s in change_points.detect(confirmed, 0.01)] == ["confirmed"]
    assert change_points.detect(refuted, 0.01) == []


def test_the_newest_point_within_the_noise_is_no_candidate():
    values = noisy([50.0] * 20, sigma=0.01, seed=3) + [50.0 * 1.02]
    assert change_points.detect(values, 0.01) == []


def test_reruns_of_one_commit_are_one_point_so_a_spike_of_a_commit_and_the_next_is_no_change_point():
    # The shape of 7644a0f-v0.7.0, 7644a0f, 9c1ddb7 in upstream's CI: two runs of one commit and the next, away.
    values = noisy([10.0] * 12 + [25.0] * 3 + [10.0] * 8, sigma=0.01, seed=5)
    commits = [f"c{i}" for i in range(12)] + ["r", "r", "n"] + [f"d{i}" for i in range(8)]
    assert change_points.detect_runs(values, commits, 0.01) == []
    # Three commits away and back is a level: two change points, in run indexes.
    distinct = [f"c{i}" for i in range(len(values))]
    steps = change_points.detect_runs(values, distinct, 0.01)
    assert [(s.before, s.after, s.ratio < 1) for s in steps] == [(11, 12, True), (14, 15, False)]


def test_collapse_takes_the_median_of_neighbouring_reruns():
    points, members = change_points.collapse([1.0, 4.0, 2.0, 8.0], ["a", "b", "b", "c"])
    assert points == pytest.approx([1.0, math.sqrt(8.0), 8.0])
    assert members == [(0,), (1, 2), (3,)]


def test_a_step_found_on_commits_is_reported_in_runs():
    values = noisy([10.0] * 10 + [14.0] * 6, sigma=0.01, seed=9)
    commits = [f"c{i // 2}" for i in range(16)]  # every commit run twice
    (step,) = change_points.detect_runs(values, commits, 0.01)
    assert (step.before, step.after, step.after_points, step.status) == (9, 10, tuple(range(10, 16)), "confirmed")


@pytest.mark.parametrize("width", [1, 2])
def test_a_spike_that_comes_back_is_no_change_point(width: int):
    levels = [10.0] * 12 + [30.0] * width + [10.0] * 12
    values = noisy(levels, sigma=0.01, seed=width)
    assert change_points.detect(values, flat_noise(values)) == []
    # The library's own segmentation does see it: the persistence rule is what sets it aside.
    assert change_points.ruptures_segments(np.log(values) / flat_noise(values))


def test_a_regression_that_lasts_three_runs_and_is_fixed_is_two_change_points():
    values = noisy([10.0] * 12 + [25.0] * 3 + [10.0] * 8, sigma=0.01, seed=5)
    steps = change_points.detect(values, flat_noise(values))
    assert [(s.after, "improved" if s.ratio > 1 else "regressed") for s in steps] == [(12, "regressed"), (15, "improved")]


def test_a_drift_inside_the_noise_is_no_change_point():
    values = noisy([100.0] * 15 + [101.0] * 15, sigma=0.03, seed=7)
    assert change_points.detect(values, flat_noise(values)) == []


def bimodal(seed: int) -> list[float]:
    """A host that sits in one of two modes 1.2% apart for weeks at a time, the other a third of the time; the newest
    run flipped."""
    rng = random.Random(seed)
    modes = [0.0] * 4 + [0.012] * 2 + [0.0] * 5 + [0.012] * 3 + [0.0] * 4 + [0.012] * 2 + [0.0] * 4 + [0.012] * 3 + [0.0] * 3 + [0.012]
    return [100.0 * math.exp(mode + rng.gauss(0, 0.0003)) for mode in modes]


def test_a_bimodal_host_is_seen_by_the_window_spread():
    values = bimodal(seed=29)
    commits = [str(i) for i in range(len(values))]
    found = noise.series_noises([("s", "pool", "metric", [math.log(v) for v in values], commits)])["s"]
    # Consecutive differences are nearly all inside one mode: their median says the floor.
    which, size, _ = noise.differences(np.zeros(len(values), dtype=int), np.log(values), np.arange(len(values)))
    assert float(np.median(size)) * noise.MAD_TO_RUN_SIGMA < 0.002
    # The window sees both modes: the noise is most of the gap (IQR of two modes / 1.349), and a flip is no step.
    assert found.method == "window" and 0.006 < found.noise < 0.012 and found.window == found.noise
    assert change_points.detect_runs(values, commits, found.noise) == []
    # ... while at the floor the newest run's flip would have been a (candidate) step.
    assert [s.status for s in change_points.detect_runs(values, commits, noise.NOISE_FLOOR)] == ["candidate"]


def test_the_window_never_hides_a_step_of_the_minimum_effect():
    # A series with two levels 30% apart: its windows straddle the step, but the cap keeps a 5% step at three noises.
    values = noisy([10.0] * 5 + [13.0] * 5, sigma=0.001, seed=31)
    found = noise.series_noises([("s", "p", "m", [math.log(v) for v in values], [str(i) for i in range(10)])])["s"]
    assert found.window > 0.1 and found.noise == pytest.approx(noise.WINDOW_MOST)
    assert 3 * found.noise == pytest.approx(math.log(1.05))


def test_a_short_series_has_no_window():
    found = noise.series_noises([("s", "p", "m", [0.0, 0.01, 0.0, 0.01, 0.0], list("abcde"))])["s"]
    assert found.window is None and found.method != "window"


def test_the_noise_of_a_flat_noisy_series_is_near_its_true_sigma():
    for sigma in (0.01, 0.05):
        values = noisy([100.0] * 400, sigma=sigma, seed=11)
        assert flat_noise(values) == pytest.approx(sigma, rel=0.2)


def test_a_step_barely_moves_the_noise_estimate():
    values = noisy([100.0] * 100 + [150.0] * 100, sigma=0.02, seed=13)
    assert flat_noise(values) == pytest.approx(0.02, rel=0.25)


def test_reruns_of_one_commit_are_direct_evidence():
    # Consecutive commits agree to 0.1%, but two runs of one commit differ by 8%: the host wanders between runs.
    which, size, rerun = noise.differences(np.zeros(4, dtype=int), np.array([0.0, 0.001, 0.08, 0.002]), np.array([0, 1, 1, 2]))
    # The rerun of b against b's first run; a -> b and b -> c consecutive (b -> b is the rerun's, not consecutive).
    assert list(zip(rerun.tolist(), size.tolist())) == [
        (True, pytest.approx(0.079)),
        (False, pytest.approx(0.001)),
        (False, pytest.approx(0.078)),
    ]

    def series(seed: int) -> tuple:
        rng = random.Random(seed)
        logs, commits = [], []
        for i in range(12):
            base = 0.001 * rng.gauss(0, 1)
            logs += [base, base + rng.choice((-0.08, 0.08))] if i % 4 == 0 else [base]
            commits += [f"c{i}", f"c{i}"] if i % 4 == 0 else [f"c{i}"]
        return (seed, "pool", "metric", logs, commits)

    estimated = noise.series_noises([series(seed) for seed in range(3)])
    # Pooled, the nine reruns say a run moves by about 8% / sqrt(2): far above the consecutive differences.
    assert {e.method for e in estimated.values()} == {"reruns-pooled"}
    assert all(e.noise > 0.04 for e in estimated.values())


def test_a_short_series_takes_its_pools_noise():
    long = ("long", "pool", "metric", [math.log(v) for v in noisy([1.0] * 30, 0.03)], [str(i) for i in range(30)])
    other = ("other", "elsewhere", "metric", [math.log(v) for v in noisy([1.0] * 30, 0.2)], [str(i) for i in range(30)])
    estimated = noise.series_noises([long, other, ("short", "pool", "metric", [0.0, 0.1], ["a", "b"])])
    assert estimated["short"].method == "pooled" and estimated["short"].noise == estimated["long"].noise
    alone = noise.series_noises([("alone", "p", "m", [0.0], ["a"])])["alone"]
    assert (alone.method, alone.noise) == ("none", None)


def host_case(baseline_factor: float) -> str:
    commits = [f"c{i}" for i in range(20)]
    values = noisy([10.0] * 10 + [14.0] * 10, sigma=0.01, seed=17)
    baseline = noisy([50.0] * 10 + [50.0 * baseline_factor] * 10, sigma=0.01, seed=19)
    (step,) = change_points.detect(values, 0.01)
    return cause.cause(step, commits, 0.01, baseline, commits, 0.01)


def test_a_step_the_baseline_takes_by_the_same_factor_is_the_host():
    assert host_case(1.4) == "host"


def test_a_step_the_baseline_does_not_take_is_the_code():
    assert host_case(1.0) == "code"
    assert host_case(1.15) == "code"  # moved, but not by the same factor


def test_the_reference_is_the_groups_baseline_or_for_the_baseline_the_next_one():
    assert cause.reference_provider({"liger", "huggingface", "torch"}, ["huggingface", "torch"], "liger") == "huggingface"
    assert cause.reference_provider({"liger", "huggingface", "torch"}, ["huggingface", "torch"], "huggingface") == "torch"
    # A baseline with no second baseline in its group is witnessed by another provider of the group.
    assert cause.reference_provider({"liger", "huggingface"}, ["huggingface", "torch"], "huggingface") == "liger"
    assert cause.reference_provider({"huggingface"}, ["huggingface", "torch"], "huggingface") is None
    assert cause.reference_provider({"liger", "other"}, ["huggingface", "torch"], "liger") is None


def test_confidence_is_lower_when_the_segments_overlap():
    clean = noisy([100.0] * 30 + [120.0] * 30, sigma=0.005, seed=23)
    overlapping = noisy([100.0] * 30 + [112.0] * 30, sigma=0.03, seed=23)
    (sure,) = change_points.detect(clean, flat_noise(clean))
    (less_sure,) = change_points.detect(overlapping, flat_noise(overlapping))
    assert sure.confidence == 1.0
    assert 0.5 < less_sure.confidence < 1.0


@pytest.mark.parametrize("length", [6, 7, 8, 9, 10, 11, 17])
def test_the_window_quartiles_are_numpys_percentiles_to_the_last_bit(length: int):
    rng = np.random.default_rng(length)
    values = np.log(rng.lognormal(11, 0.05, size=(500, length)))
    values[::7, 2] = values[::7, 1]  # ties
    values[::11] = values[::11, :1]  # a series of one value
    values[5, 3], values[9, 0] = np.nan, np.inf
    windows = np.lib.stride_tricks.sliding_window_view(values, min(noise.WINDOW, length), axis=1)
    expected = np.percentile(windows, [25, 75], axis=2)
    for found, wanted in zip(noise.quartiles(windows), expected):
        assert np.array_equal(found, wanted, equal_nan=True)
