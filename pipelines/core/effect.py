"""The practical minimum effect: a change smaller than this is not worth a maintainer's attention, however sure.

Shared by the change points (which keep a smaller step in their table but flag it and do not draw it as a
change) and the verdict (which calls nothing `slower` below it). 5%: upstream's own dashboard rule alarms at
10%, and a week-to-week host flip of its CI moves a series by 1-2%.
"""

from __future__ import annotations

import math

MIN_EFFECT = 0.05


def below_min_effect(ratio: float, min_effect: float = MIN_EFFECT) -> bool:
    """Whether a ratio (either way round: before / after or after / before) moves by less than `min_effect`."""
    return abs(math.log(ratio)) < math.log1p(min_effect)
