"""Persistent shifts in one series (SPEC section 8): where, how far, and how sure.

A series is one implementation's passed runs in one comparable group, in observed order, as ln(value).
Detection has two parts:

1. Segmentation by `ruptures` (chosen by measurement on upstream's CI history, see docs/statistics.md's
   "Change points: the library and why"): PELT (Killick et al. 2012, exact, with pruning) with the
   l2 cost, in ruptures' compiled `KernelCPD(kernel="linear")`, on the values divided by the series'
   noise, so that one penalty (PENALTY_PER_LOG_N x ln n, BIC-like) means the same on every series.
   It splits wherever a mean shift pays for itself, spikes included (MIN_SIZE = 1 lets a spike be
   its own segment instead of bending its neighbours' levels).
2. Persistence, the warehouse's own rule, the same whatever segments the library gives:
   - a segment too short to be a level (fewer than MIN_INTERIOR points between two others, fewer
     than MIN_AFTER at the end, one point at the start) is a spike when the levels either side
     agree (it came back): its points are set aside and its neighbours merged; when they do not
     agree it is part of the step and joins its nearer neighbour;
   - two neighbouring segments whose medians do not differ significantly are merged, the weakest
     pair first: |shift| >= MIN_SHIFT_NOISES x noise and z >= MIN_Z, with
     z = |shift| / (noise x MEDIAN_EFFICIENCY x sqrt(1/n_before + 1/n_after)).
   What is left are the change points; before/after values are the medians of the two segments.

Confidence: the probability that a run after the step lies beyond a run before it, in the step's
direction (over every pair of a run before and a run after, ties counting half: the common-language
effect size, Mann-Whitney's U over n_before x n_after). 1.0 when every run after is slower (or faster)
than every run before; toward 0.5 as the two segments overlap. It asks nothing of the noise estimate,
so a step that passed the tests above on a noise estimated too small still shows its overlap here
(every step reported has z >= MIN_Z, so a p-value would say nearly 1 for all of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np

# BIC's penalty is 2 ln n per change for a unit-variance l2 cost, which assumes normal noise; upstream's
# week-to-week noise has heavy tails (a fifth of consecutive speed points differ by more than 10%, with a
# median difference under 1%). Measured on its CI history (python -m bench.change_points): at
# 3 ln n, 13 change points fell between two runs of one commit, at 8 ln n 2, at 16 ln n none, and every
# known step was found at all three. At 16 ln n a step over a long segment still needs only about 3 noises
# (what MIN_SHIFT_NOISES asks anyway); a step with two points after it, about 5.5.
PENALTY_PER_LOG_N = 16.0
MIN_SIZE = 1
# A level needs three points between two others: two points that go away and come back are a spike.
MIN_INTERIOR = 3
# SPEC: a step is persistent with at least two points after it (the newest data cannot wait for a third).
MIN_AFTER = 2
# A shift under three run-to-run sigmas is within what one rerun of the same commit often moves.
MIN_SHIFT_NOISES = 3.0
# ... and it must stand out of the segments' own spread: z >= 4 is p < 0.0001 for one pair of segments.
MIN_Z = 4.0
# The standard error of a median of normal values is sqrt(pi / 2) = 1.2533 times a mean's.
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)

Segmenter = Callable[[np.ndarray], list[int]]


@dataclass(frozen=True)
class Step:
    before: int  # index of the last run before the shift
    after: int  # index of the first run after it
    before_value: float  # median of the segment before (the series' unit, not ln)
    after_value: float
    confidence: float
    before_points: tuple[int, ...]  # indexes of the segments' points (spikes set aside), for the cause
    after_points: tuple[int, ...]

    @property
    def ratio(self) -> float:
        """before / after: above 1, the newer runs are faster or leaner."""
        return self.before_value / self.after_value


def ruptures_segments(scaled: np.ndarray, penalty_per_log_n: float = PENALTY_PER_LOG_N) -> list[int]:
    """Indexes where a new segment starts, by PELT with the l2 cost (see the module)."""
    import ruptures

    if len(scaled) < 2:
        return []
    ends = ruptures.KernelCPD(kernel="linear", min_size=MIN_SIZE).fit(scaled).predict(pen=penalty_per_log_n * math.log(len(scaled)))
    return [int(end) for end in ends[:-1]]


def detect(values: Sequence[float], noise: float, segmenter: Segmenter = ruptures_segments) -> list[Step]:
    """The persistent steps of one series (values > 0, in order) with the given noise (sigma of ln)."""
    logs = [math.log(v) for v in values]
    if len(logs) < 1 + MIN_AFTER:
        return []
    starts = segmenter(np.asarray(logs) / noise)
    bounds = [0, *sorted(set(starts) - {0, len(logs)}), len(logs)]
    segments = [list(range(a, b)) for a, b in zip(bounds, bounds[1:])]
    segments = _persistent(segments, logs, noise)
    steps = []
    for left, right in zip(segments, segments[1:]):
        shift, _ = _shift(left, right, logs, noise)
        steps.append(
            Step(
                before=left[-1],
                after=right[0],
                before_value=math.exp(median(logs[i] for i in left)),
                after_value=math.exp(median(logs[i] for i in right)),
                confidence=_beyond(left, right, logs, shift),
                before_points=tuple(left),
                after_points=tuple(right),
            )
        )
    return steps


def _beyond(left: Sequence[int], right: Sequence[int], logs: Sequence[float], shift: float) -> float:
    """The share of (before, after) pairs whose after run is beyond the before run in the shift's direction."""
    pairs = (np.asarray([logs[i] for i in right])[:, None] - np.asarray([logs[i] for i in left])[None, :]) * np.sign(shift)
    return float(((pairs > 0).sum() + 0.5 * (pairs == 0).sum()) / pairs.size)


def _shift(left: Sequence[int], right: Sequence[int], logs: Sequence[float], noise: float) -> tuple[float, float]:
    """(shift in ln, z) between two segments' medians."""
    shift = median(logs[i] for i in right) - median(logs[i] for i in left)
    error = noise * MEDIAN_EFFICIENCY * math.sqrt(1 / len(left) + 1 / len(right))
    return shift, abs(shift) / error


def significant(left: Sequence[int], right: Sequence[int], logs: Sequence[float], noise: float) -> bool:
    shift, z = _shift(left, right, logs, noise)
    return abs(shift) >= MIN_SHIFT_NOISES * noise and z >= MIN_Z


def _persistent(segments: list[list[int]], logs: Sequence[float], noise: float) -> list[list[int]]:
    """Spikes set aside and weak boundaries merged, one at a time, until every boundary is a step."""
    while True:
        short = _first_short(segments)
        if short is not None:
            segments = _resolve_short(segments, short, logs, noise)
            continue
        weakest = _weakest_boundary(segments, logs, noise)
        if weakest is None:
            return segments
        segments = [*segments[:weakest], segments[weakest] + segments[weakest + 1], *segments[weakest + 2 :]]


def _too_short(segments: list[list[int]], i: int) -> bool:
    if len(segments) == 1:
        return False
    if i == len(segments) - 1:
        return len(segments[i]) < MIN_AFTER
    if i == 0:
        return len(segments[i]) < 2
    return len(segments[i]) < MIN_INTERIOR


def _first_short(segments: list[list[int]]) -> int | None:
    """The shortest segment too short to be a level (the earliest of equals), or None."""
    candidates = [i for i in range(len(segments)) if _too_short(segments, i)]
    return min(candidates, key=lambda i: (len(segments[i]), i)) if candidates else None


def _resolve_short(segments: list[list[int]], i: int, logs: Sequence[float], noise: float) -> list[list[int]]:
    if i == 0 or i == len(segments) - 1:
        # A lone first point, or a newest point not yet confirmed: set aside.
        rest = [*segments[:i], *segments[i + 1 :]]
        return rest
    left, right = segments[i - 1], segments[i + 1]
    if not significant(left, right, logs, noise):
        # It went away and came back: a spike. Its points are set aside, its neighbours are one level.
        return [*segments[: i - 1], left + right, *segments[i + 2 :]]
    level = median(logs[j] for j in segments[i])
    nearer_left = abs(level - median(logs[j] for j in left)) < abs(level - median(logs[j] for j in right))
    if nearer_left:
        return [*segments[: i - 1], left + segments[i], *segments[i + 1 :]]
    return [*segments[:i], segments[i] + right, *segments[i + 2 :]]


def _weakest_boundary(segments: list[list[int]], logs: Sequence[float], noise: float) -> int | None:
    """The boundary (index of its left segment) with the smallest z among those that are not steps."""
    weak = [i for i in range(len(segments) - 1) if not significant(segments[i], segments[i + 1], logs, noise)]
    if not weak:
        return None
    return min(weak, key=lambda i: _shift(segments[i], segments[i + 1], logs, noise)[1])
