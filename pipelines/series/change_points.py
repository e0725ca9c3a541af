"""Persistent shifts in one series (SPEC section 8): where, how far, and how sure.

A series is one implementation's passed runs in one comparable group, in the order of their commits
(sql/series/series_points.sql), as ln(value). Reruns of one commit (0a62700 and 0a62700-v0.6.4) are one
point, their median (`collapse`): two runs of unchanged code are no more evidence of a level than one, and
counted apart they turned a spike of one commit and the next (three runs) into a level of its own. Their
difference is still evidence of the noise (noise.py reads every run). Detection has two parts:

1. Segmentation by `ruptures` (chosen by measurement on upstream's CI history, see docs/statistics.md's
   "Change points: the library and why"): PELT (Killick et al. 2012, exact, with pruning) with the
   l2 cost, in ruptures' compiled `KernelCPD(kernel="linear")`, on the values divided by the series'
   noise, so that one penalty (PENALTY_PER_LOG_N x ln n, BIC-like) means the same on every series.
   It splits wherever a mean shift pays for itself, spikes included (MIN_SIZE = 1 lets a spike be
   its own segment instead of bending its neighbours' levels).
2. Persistence, the warehouse's own rule, the same whatever segments the library gives:
   - a segment too short to be a level (fewer than MIN_INTERIOR commits between two others, one point
     at the start) is a spike when the levels either side agree (it came back within a few commits):
     its points are set aside and its neighbours merged; when they do not agree it is part of the
     step and joins its nearer neighbour;
   - two neighbouring segments whose medians do not differ significantly are merged, the weakest
     pair first: |shift| >= MIN_SHIFT_NOISES x noise and z >= MIN_Z, with
     z = |shift| / (noise x MEDIAN_EFFICIENCY x sqrt(1/n_before + 1/n_after)).
   What is left are the change points; before/after values are the medians of the two segments.
3. The newest commits: a step with fewer than CONFIRM_AFTER commits after it (the newest one or two)
   cannot yet be told from a spike; it is a `candidate` (Step.status), shown as unconfirmed until the
   next runs confirm it (a third commit at the new level) or refute it (they come back, and the
   segment becomes a spike). A step with CONFIRM_AFTER or more is `confirmed`.

Confidence: the probability that a run after the step lies beyond a run before it, in the step's
direction (over every pair of a run before and a run after, ties counting half: the common-language
effect size, Mann-Whitney's U over n_before x n_after). 1.0 when every run after is slower (or faster)
than every run before; toward 0.5 as the two segments overlap. It asks nothing of the noise estimate,
so a step that passed the tests above on a noise estimated too small still shows its overlap here
(every step reported has z >= MIN_Z, so a p-value would say nearly 1 for all of them).
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
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
# The newest commit alone can show a step (a candidate, below): the newest data cannot wait.
MIN_AFTER = 1
# ... and three commits at the new level confirm it: two could still be a spike of the kind set aside above.
CONFIRM_AFTER = 3
CONFIRMED, CANDIDATE = "confirmed", "candidate"
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
    after_commits: int = 0  # commits (reruns counted once) in the segment after; 0: len(after_points)

    @property
    def ratio(self) -> float:
        """before / after: above 1, the newer runs are faster or leaner."""
        return self.before_value / self.after_value

    @property
    def status(self) -> str:
        """`candidate` while fewer than CONFIRM_AFTER commits stand after it, else `confirmed`."""
        return CANDIDATE if (self.after_commits or len(self.after_points)) < CONFIRM_AFTER else CONFIRMED


def collapse(values: Sequence[float], commits: Sequence[object]) -> tuple[list[float], list[tuple[int, ...]]]:
    """One point per commit: neighbouring runs of one commit (ordered by commit, its reruns are neighbours)
    as their median, with the indexes of the runs each point stands for."""
    points: list[float] = []
    members: list[tuple[int, ...]] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and commits[j + 1] == commits[i]:
            j += 1
        points.append(math.exp(median(math.log(values[k]) for k in range(i, j + 1))))
        members.append(tuple(range(i, j + 1)))
        i = j + 1
    return points, members


def detect_runs(values: Sequence[float], commits: Sequence[object], noise: float, segmenter: Segmenter | None = None) -> list[Step]:
    """The steps of a series of runs with their commits: detected on one point per commit (`collapse`),
    reported in run indexes (before: the last run of the commit before, after: the first run of the commit
    after; the segments' points: every run of their commits)."""
    points, members = collapse(values, commits)
    found = detect(points, noise) if segmenter is None else detect(points, noise, segmenter)
    runs = []
    for step in found:
        before = tuple(k for p in step.before_points for k in members[p])
        after = tuple(k for p in step.after_points for k in members[p])
        runs.append(
            Step(
                members[step.before][-1],
                members[step.after][0],
                step.before_value,
                step.after_value,
                step.confidence,
                before,
                after,
                len(step.after_points),
            )
        )
    return runs


def import_segmenter_in_background() -> None:
    """Start importing ruptures on a thread of its own, for a caller whose next work does not hold the GIL (DuckDB
    loading the tables): the import takes about a second (ruptures imports every cost it has, scipy.stats and
    scipy.spatial with them), a small warehouse's whole series step. `ruptures_segments`' own import then waits for
    this one (Python's lock per module) rather than starting it."""
    if "ruptures" not in sys.modules:
        threading.Thread(target=importlib.import_module, args=("ruptures",), name="import ruptures", daemon=True).start()


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
    segments = _newest(_persistent(segments, logs, noise), logs, noise)
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


def _newest(segments: list[list[int]], logs: Sequence[float], noise: float) -> list[list[int]]:
    """The newest two points, or the newest one, split off the last level as a candidate when they stand
    apart from it: the segmentation's penalty, which protects the history from spikes, asks a lone newest
    point for about 7.5 noises, while a candidate needs only what a step needs (`significant`)."""
    last = segments[-1]
    for k in (2, 1):
        rest, newest = last[:-k], last[-k:]
        if len(rest) < MIN_INTERIOR:
            continue
        level = median(logs[i] for i in rest)
        # Two newest points are a candidate only when both left the level, on one side.
        apart = {math.copysign(1.0, logs[i] - level) for i in newest if abs(logs[i] - level) >= MIN_SHIFT_NOISES * noise}
        if (
            sum(abs(logs[i] - level) >= MIN_SHIFT_NOISES * noise for i in newest) == k
            and len(apart) == 1
            and significant(rest, newest, logs, noise)
        ):
            return [*segments[:-1], rest, newest]
    return segments


def _too_short(segments: list[list[int]], i: int) -> bool:
    if len(segments) == 1:
        return False
    if i == len(segments) - 1:
        return len(segments[i]) < MIN_AFTER  # never, at MIN_AFTER = 1: the newest point is a candidate
    if i == 0:
        return len(segments[i]) < 2
    return len(segments[i]) < MIN_INTERIOR


def _first_short(segments: list[list[int]]) -> int | None:
    """The shortest segment too short to be a level (the earliest of equals), or None."""
    candidates = [i for i in range(len(segments)) if _too_short(segments, i)]
    return min(candidates, key=lambda i: (len(segments[i]), i)) if candidates else None


def _resolve_short(segments: list[list[int]], i: int, logs: Sequence[float], noise: float) -> list[list[int]]:
    if i == 0 or i == len(segments) - 1:
        # A lone first point: set aside.
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
