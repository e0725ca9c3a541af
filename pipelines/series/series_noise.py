"""A series' noise (SPEC section 8): how much two runs of unchanged code differ, learned from its own history.

The noise is a standard deviation of ln(value) between runs (0.05 is about 5%): the spread of one run
around the series' level, not the p20-p80 band of the few iterations inside one run. It is estimated
from differences between runs, which a step in the level barely touches:

- `reruns`: pairs of runs of one commit (the CI stream benchmarks some commits twice) differ by noise
  alone: the direct evidence;
- `consecutive`: each run against the one before it; a step or a spike changes only one or two of
  these differences, and the estimate is their median.

A series has one or two reruns at most, so the rerun evidence is pooled over comparable series (the
same kernel, pass, metric, GPU, provider and backend, every other workload): when the pool holds at
least MIN_DIFFERENCES rerun differences, the series' noise is at least their spread. In upstream's CI
history that matters: each week's run is on another cloud host, so the level wanders by a percent or
two from week to week in clusters, which consecutive differences alone (their median: 0.8%) see as
smaller than two runs of one commit a week apart really differ (method `reruns-pooled` when the
pool's spread is the larger).

A difference of two runs has twice a run's variance, so sigma = MAD(differences) x 1.4826 / sqrt(2)
(1.4826 turns a median absolute deviation into a normal sigma). With fewer than MIN_DIFFERENCES the
series is too short to say: the noise is pooled, the median of the sigmas of comparable series (the same
kernel, pass, metric, GPU, provider and backend, every other workload) that have enough; when none has,
the median over every series of the same metric and GPU; when nothing in the warehouse has a history
to learn from, the noise is unknown (None, method `none`): no bare percentage stands in for evidence, so
such a series has no change points and version_changes judges its runs by their p20-p80 bands alone.
NOISE_FLOOR keeps a series whose runs are all identical (memory, most often) from having a zero noise
that every later difference of a rounding would exceed.

Differences do not see a bimodal host. Upstream's CI runs each week on another cloud host, and some series
sit in one of two modes about 1.2% apart for weeks, then the other: nearly every consecutive difference is
then zero (the median of them, 0) while the series is plainly 1.2% wide, so a flip reads as a step of many
noises. The `window` spread sees it: over every window of WINDOW consecutive points of a series with at
least MIN_WINDOW points, the interquartile range of ln value scaled to a normal sigma (IQR / 1.349), and
the larger of the median of those over the windows (a step moves only the windows that straddle it, and a
quarter of a window in the other mode already opens its IQR) and the newest window's (a host that turned
bimodal in the series' second half, as upstream's torch series did, leaves the median over all windows
near zero; the newest run is judged against the newest runs). A window that straddles a real step opens as well, and
in a short series most windows do; so the window raises the noise by at most WINDOW_MOST, the noise at
which a step of the practical minimum effect (pipelines/core/effect.py, 5%) still is the MIN_SHIFT_NOISES
a change point needs: host modes are a percent or two apart, and no window can hide a 5% step. A series'
own noise is the larger of its differences' estimate and its window spread so capped (method `window`
when that is the larger), the floor below both; the window spread itself, uncapped, is stored beside it
(`series_noise.window_noise`) whatever won.

`noise_arrays` computes every series at once with numpy (a warehouse holds millions of series, most of
one or two runs); `series_noises` is the same for a few series given one by one.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple

import numpy as np

from pipelines.core import effect
from pipelines.series.change_points import MIN_SHIFT_NOISES

# 1.4826: the MAD of a normal distribution times this is its sigma; / sqrt(2): one run, not a difference of two.
MAD_TO_RUN_SIGMA = 1.4826 / np.sqrt(2)
# Below this many differences a series' own estimate is mostly luck (a median of four is already a poor sigma).
MIN_DIFFERENCES = 5
# 0.2%: upstream prints memory to the MiB and latencies to a few digits; a closer agreement is rounding.
NOISE_FLOOR = 0.002
# How each noise was found (NoiseArrays.method holds indexes into this).
# A window of ten weekly runs: long enough for an interquartile range, short against a series' life.
WINDOW = 10
# ... and a series needs this many points for one (an IQR of fewer is a guess).
MIN_WINDOW = 6
# The interquartile range of a normal distribution is 1.349 sigma.
IQR_TO_SIGMA = 1 / 1.349
# ln(1.05) / 3 = 1.6%: a 5% step is still three noises (see the module).
WINDOW_MOST = math.log1p(effect.MIN_EFFECT) / MIN_SHIFT_NOISES
METHODS = ("consecutive", "reruns+consecutive", "reruns-pooled", "pooled", "pooled-metric", "none", "window")
CONSECUTIVE, RERUNS, RERUNS_POOLED, POOLED, POOLED_METRIC, NONE, WINDOWED = range(len(METHODS))


class Noise(NamedTuple):
    noise: float | None  # sigma of ln(value) between runs; None when nothing in the warehouse says
    n_points: int
    n_differences: int  # the series' own differences (0 when pooled)
    method: str
    window: float | None = None  # the window spread, None for a short series


class NoiseArrays(NamedTuple):
    noise: np.ndarray  # per series, NaN when unknown
    n_differences: np.ndarray
    method: np.ndarray  # index into METHODS
    window: np.ndarray  # the window spread (sigma of ln), NaN for a series shorter than MIN_WINDOW


def differences(series_of: np.ndarray, logs: np.ndarray, commits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every between-run difference, as (series, |difference|, is a rerun's), of points given series after series.

    Every later run of a commit is paired with that commit's first run in the series (a rerun); each run
    is also paired with the run before it when that one is of another commit (consecutive).
    """
    n = len(logs)
    key = series_of.astype(np.int64) * (int(commits.max(initial=0)) + 1) + commits
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    first_of = first[inverse]
    rerun = first_of != np.arange(n)
    consecutive = np.zeros(n, dtype=bool)
    consecutive[1:] = (series_of[1:] == series_of[:-1]) & (commits[1:] != commits[:-1])
    previous = np.maximum(np.arange(n) - 1, 0)
    return (
        np.concatenate([series_of[rerun], series_of[consecutive]]),
        np.abs(np.concatenate([logs[rerun] - logs[first_of[rerun]], logs[consecutive] - logs[previous[consecutive]]])),
        np.concatenate([np.ones(int(rerun.sum()), dtype=bool), np.zeros(int(consecutive.sum()), dtype=bool)]),
    )


def group_medians(groups: np.ndarray, values: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(median of each group's values, NaN for an empty group; count of each group's values)."""
    counts = np.bincount(groups, minlength=n_groups)
    if not len(values):
        return np.full(n_groups, np.nan), counts
    ordered = values[np.lexsort((values, groups))]
    starts = np.cumsum(counts) - counts
    low = np.minimum(starts + np.maximum(counts - 1, 0) // 2, len(ordered) - 1)
    high = np.minimum(starts + counts // 2, len(ordered) - 1)
    return np.where(counts > 0, (ordered[low] + ordered[high]) / 2, np.nan), counts


def spread(median_difference: np.ndarray) -> np.ndarray:
    """sigma of one run from the median |difference| of two (see the module), at least NOISE_FLOOR."""
    return np.maximum(median_difference * MAD_TO_RUN_SIGMA, NOISE_FLOOR)


def window_spreads(series_of: np.ndarray, logs: np.ndarray, n_series: int) -> np.ndarray:
    """Each series' window spread (see the module): IQR(ln value) / 1.349 over windows of WINDOW consecutive
    points (all of them when it has fewer), the larger of the median over its windows and its newest window;
    NaN below MIN_WINDOW points."""
    spreads = np.full(n_series, np.nan)
    counts = np.bincount(series_of, minlength=n_series)
    starts = np.cumsum(counts) - counts
    long = np.flatnonzero(counts >= MIN_WINDOW)
    # The series of one length are one array, its windows computed together (row by row, the same arithmetic as
    # one series at a time, which took most of the noise's time at a million runs).
    for length in np.unique(counts[long]):
        chosen = long[counts[long] == length]
        values = logs[starts[chosen, None] + np.arange(length)]
        windows = np.lib.stride_tricks.sliding_window_view(values, min(WINDOW, int(length)), axis=1)
        q1, q3 = quartiles(windows)
        widths = (q3 - q1) * IQR_TO_SIGMA
        spreads[chosen] = np.maximum(np.median(widths, axis=1), widths[:, -1])
    return spreads


def quartiles(windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.percentile(windows, [25, 75], axis=2)` to the last bit: each window sorted once, then numpy's linear
    interpolation between its order statistics with numpy's own arithmetic (its `_lerp`). np.percentile moved the
    axis first and partitioned a copy: 3 to 20 times as long, most of the window spreads' time at 10M runs."""
    ordered = np.sort(windows, axis=2)
    size = ordered.shape[2]
    found = []
    for q in (0.25, 0.75):
        place = q * (size - 1)
        low = int(place)
        fraction = place - low
        below, above = ordered[:, :, low], ordered[:, :, min(low + 1, size - 1)]
        difference = above - below
        found.append(above - difference * (1 - fraction) if fraction >= 0.5 else below + difference * fraction)
    # A window with a NaN (sorted last) has NaN quartiles, as np.percentile gives.
    missing = np.isnan(ordered[:, :, -1])
    return tuple(np.where(missing, np.nan, value) for value in found)


class OwnNoise(NamedTuple):
    """What a series says of its own noise (`own_noise`), before anything is pooled over comparable series."""

    noise: np.ndarray  # per series: its own estimate (differences, widened by the window), NaN below MIN_DIFFERENCES
    n_differences: np.ndarray
    method: np.ndarray  # CONSECUTIVE, RERUNS or WINDOWED (where noise is NaN: not used)
    window: np.ndarray
    rerun_series: np.ndarray  # every rerun difference: its series ...
    rerun_size: np.ndarray  # ... and its |difference|, the evidence a pool shares

    @property
    def own(self) -> np.ndarray:
        return self.n_differences >= MIN_DIFFERENCES


def own_noise(series_of: np.ndarray, logs: np.ndarray, commits: np.ndarray, n_series: int) -> OwnNoise:
    """Each series' own estimate, from its points alone (given series after series, as `noise_arrays` takes
    them): what can be computed a batch of series at a time; the pools need every series (`pooled_noise`)."""
    which, size, is_rerun = differences(series_of, logs, commits)
    own_median, n_differences = group_medians(which, size, n_series)
    n_reruns = np.bincount(which[is_rerun], minlength=n_series)
    own = n_differences >= MIN_DIFFERENCES
    noise = np.where(own, spread(own_median), np.nan)
    method = np.where(n_reruns > 0, RERUNS, CONSECUTIVE)
    # A bimodal host: the window's spread, when wider than the differences say, is the noise.
    window = window_spreads(series_of, logs, n_series)
    capped = np.minimum(window, WINDOW_MOST)
    widened = own & (capped > noise)
    noise = np.where(widened, capped, noise)
    method = np.where(widened, WINDOWED, method)
    return OwnNoise(noise, n_differences, method, window, which[is_rerun], size[is_rerun])


def pooled_noise(found: OwnNoise, pool: np.ndarray, metric_pool: np.ndarray) -> NoiseArrays:
    """Every series' noise from the own estimates of every series: a pool's reruns raise a series' own noise,
    and a series too short for its own gets its pool's (else its metric pool's) median. sql/series/series_noise.sql
    is the same for the database build, which streams the series."""
    own, noise, method = found.own, found.noise, found.method
    # The pool's reruns: when they say a run moves more than the series' own differences do, they win.
    n_pools = int(max(pool.max(initial=-1), metric_pool.max(initial=-1))) + 1
    rerun_median, rerun_count = group_medians(pool[found.rerun_series], found.rerun_size, n_pools)
    pooled_reruns = np.where(rerun_count >= MIN_DIFFERENCES, spread(rerun_median), np.nan)[pool]
    raised = own & (pooled_reruns > noise)
    noise = np.where(raised, pooled_reruns, noise)
    method = np.where(raised, RERUNS_POOLED, method)
    # Too short: the median of the pool's own estimates, else the metric pool's, else none.
    pool_median, _ = group_medians(pool[own], noise[own], n_pools)
    metric_median, _ = group_medians(metric_pool[own], noise[own], n_pools)
    short = ~own
    by_pool = short & ~np.isnan(pool_median[pool])
    by_metric = short & ~by_pool & ~np.isnan(metric_median[metric_pool])
    noise = np.where(by_pool, pool_median[pool], np.where(by_metric, metric_median[metric_pool], noise))
    method = np.where(by_pool, POOLED, np.where(by_metric, POOLED_METRIC, np.where(short, NONE, method)))
    return NoiseArrays(noise, np.where(own, found.n_differences, 0), method, found.window)


def noise_arrays(series_of: np.ndarray, logs: np.ndarray, commits: np.ndarray, pool: np.ndarray, metric_pool: np.ndarray) -> NoiseArrays:
    """The noise of every series. Points come series after series (`series_of`, from 0, each series in its
    order) with ln value and commit codes; `pool` and `metric_pool` give each series' pools as codes."""
    return pooled_noise(own_noise(series_of, logs, commits, len(pool)), pool, metric_pool)


def series_noises(
    series: Iterable[tuple[Hashable, Hashable, Hashable, Sequence[float], Sequence[Hashable | None]]],
) -> dict[Hashable, Noise]:
    """The noise of a few series given one by one: (key, pool key, metric pool key, ln values, commits);
    a commit None is a run of its own."""
    keys, series_of, logs, commits, pools, metric_pools = [], [], [], [], [], []
    codes: dict[Hashable, int] = {}
    pool_codes: dict[Hashable, int] = {}
    for i, (key, pool, metric_pool, log_values, commit_names) in enumerate(series):
        keys.append(key)
        pools.append(pool_codes.setdefault(("pool", pool), len(pool_codes)))
        metric_pools.append(pool_codes.setdefault(("metric", metric_pool), len(pool_codes)))
        for value, commit in zip(log_values, commit_names):
            series_of.append(i)
            logs.append(value)
            commits.append(codes.setdefault(object() if commit is None else commit, len(codes)))
    found = noise_arrays(
        np.asarray(series_of, dtype=np.int64),
        np.asarray(logs, dtype=np.float64),
        np.asarray(commits, dtype=np.int64),
        np.asarray(pools, dtype=np.int64),
        np.asarray(metric_pools, dtype=np.int64),
    )
    n_points = np.bincount(np.asarray(series_of, dtype=np.int64), minlength=len(keys))
    return {
        key: Noise(
            None if np.isnan(found.noise[i]) else float(found.noise[i]),
            int(n_points[i]),
            int(found.n_differences[i]),
            METHODS[found.method[i]],
            None if np.isnan(found.window[i]) else float(found.window[i]),
        )
        for i, key in enumerate(keys)
    }
