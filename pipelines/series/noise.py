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
NOISE_FLOOR keeps a
series whose runs are all identical (memory, most often) from having a zero noise that every later
difference of a rounding would exceed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from statistics import median
from typing import NamedTuple

# 1.4826: the MAD of a normal distribution times this is its sigma; / sqrt(2): one run, not a difference of two.
MAD_TO_RUN_SIGMA = 1.4826 / math.sqrt(2)
# Below this many differences a series' own estimate is mostly luck (a median of four is already a poor sigma).
MIN_DIFFERENCES = 5
# 0.2%: upstream prints memory to the MiB and latencies to a few digits; a closer agreement is rounding.
NOISE_FLOOR = 0.002


class Noise(NamedTuple):
    noise: float | None  # sigma of ln(value) between runs; None when nothing in the warehouse says
    n_points: int
    n_differences: int  # the evidence it rests on (0 when pooled)
    method: str  # reruns+consecutive, consecutive, reruns-pooled, pooled, pooled-metric, none


def differences(log_values: Sequence[float], commits: Sequence[Hashable | None]) -> tuple[list[float], list[float]]:
    """The between-run differences of one series: (all of them, those between reruns of one commit).

    Every run of a commit benchmarked more than once is paired with that commit's first run; consecutive
    pairs of different commits (or unknown commits) give the rest.
    """
    found: list[float] = []
    first_of: dict[Hashable, float] = {}
    reruns: list[float] = []
    for i, (value, commit) in enumerate(zip(log_values, commits)):
        if commit is not None and commit in first_of:
            found.append(value - first_of[commit])
            reruns.append(found[-1])
        elif commit is not None:
            first_of[commit] = value
        if i and (commit is None or commits[i - 1] != commit):
            found.append(value - log_values[i - 1])
    return found, reruns


def spread(found: Sequence[float]) -> float:
    """sigma of one run from differences of two: their median absolute value, scaled (see the module)."""
    return max(median(abs(d) for d in found) * MAD_TO_RUN_SIGMA, NOISE_FLOOR)


def series_noises(
    series: Iterable[tuple[Hashable, Hashable, Hashable, Sequence[float], Sequence[str | None]]],
) -> dict[Hashable, Noise]:
    """The noise of every series: `series` yields (key, pool key, metric pool key, log values, commits).

    A series too short for its own estimate takes the median of its pool's own estimates (the pool key
    names the comparable series), else of its metric pool's, else it has none.
    """
    own: dict[Hashable, Noise] = {}
    short: list[tuple[Hashable, Hashable, Hashable, int]] = []
    pooled_reruns: dict[Hashable, list[float]] = defaultdict(list)
    pools_of: dict[Hashable, tuple[Hashable, Hashable]] = {}
    for key, pool, metric_pool, log_values, commits in series:
        found, reruns = differences(log_values, commits)
        pooled_reruns[pool].extend(reruns)
        if len(found) < MIN_DIFFERENCES:
            short.append((key, pool, metric_pool, len(log_values)))
            continue
        own[key] = Noise(spread(found), len(log_values), len(found), "reruns+consecutive" if reruns else "consecutive")
        pools_of[key] = (pool, metric_pool)
    pools: dict[Hashable, list[float]] = defaultdict(list)
    metric_pools: dict[Hashable, list[float]] = defaultdict(list)
    for key, (pool, metric_pool) in pools_of.items():
        reruns = pooled_reruns[pool]
        if len(reruns) >= MIN_DIFFERENCES and spread(reruns) > own[key].noise:
            own[key] = own[key]._replace(noise=spread(reruns), method="reruns-pooled")
        pools[pool].append(own[key].noise)
        metric_pools[metric_pool].append(own[key].noise)
    for key, pool, metric_pool, n_points in short:
        if pools.get(pool):
            own[key] = Noise(median(pools[pool]), n_points, 0, "pooled")
        elif metric_pools.get(metric_pool):
            own[key] = Noise(median(metric_pools[metric_pool]), n_points, 0, "pooled-metric")
        else:
            own[key] = Noise(None, n_points, 0, "none")
    return own
