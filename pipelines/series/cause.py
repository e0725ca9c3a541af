"""Code or host (SPEC section 8): did the group's baseline move with the step?

A step is `host` when the reference series (the group's baseline provider, SPEC section 6, on the same
backend, else on any) shifts by the same factor at the same commits: its runs of the step's before
commits and of its after commits differ by at least MIN_SHIFT_NOISES of its own noise (it moved), and
that shift is within HOST_NOISES combined noises of the step's own (by the same factor). Commits, not
times, pair the two series: in one CI folder the providers run minutes apart, in either order.
The baseline's own series is checked against the next provider of the baseline list present in the
group (it cannot be its own witness), else against any other provider of the group (the first by name:
a group of `liger` and `torch` alone has no second baseline, and a machine that slows `torch` slows
`liger` alike); without one, or without reference runs of those commits on both sides, nothing says the
host moved and the cause is `code`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median

from pipelines.series.change_points import MIN_SHIFT_NOISES, Step

# Same factor within the noise: the two shifts' difference is within three sigmas of a difference of two runs of each.
HOST_NOISES = 3.0


def reference_provider(providers: set[str], baselines: Sequence[str], provider: str) -> str | None:
    """The provider whose series witnesses the host: the group's baseline, or the next one for the baseline
    itself, else (for the baseline) any other provider of the group."""
    for candidate in baselines:
        if candidate in providers and candidate != provider:
            return candidate
    if provider in baselines:
        return min((p for p in providers if p != provider), default=None)
    return None


def cause(
    step: Step,
    commits: Sequence[str],
    noise: float,
    reference_values: Sequence[float],
    reference_commits: Sequence[str],
    reference_noise: float,
) -> str:
    before_commits = {commits[i] for i in step.before_points}
    after_commits = {commits[i] for i in step.after_points}
    before = [math.log(v) for v, c in zip(reference_values, reference_commits) if c in before_commits]
    after = [math.log(v) for v, c in zip(reference_values, reference_commits) if c in after_commits]
    if not before or not after:
        return "code"
    reference_shift = median(after) - median(before)
    shift = math.log(step.after_value / step.before_value)
    moved = abs(reference_shift) >= MIN_SHIFT_NOISES * reference_noise
    same_factor = abs(shift - reference_shift) <= HOST_NOISES * math.sqrt(noise**2 + reference_noise**2)
    return "host" if moved and same_factor else "code"
