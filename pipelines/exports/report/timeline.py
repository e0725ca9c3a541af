"""The changes page's picture: each change point at the time of the first run after it, by how much."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

from pipelines.exports.report.style import BASELINE, GRID, INK, LABEL_SIZE, MUTED, TICK_SIZE
from pipelines.exports.report.svg import Axis, Canvas, Drawing, num

IMPROVED, REGRESSED = "#2166ac", "#b2182b"
VERDICT_COLORS = (("improved", IMPROVED), ("regressed", REGRESSED))
# An unconfirmed (candidate) change point: the verdict's color, faint, in a legend entry of its own.
CANDIDATE_OPACITY = 0.35


def changes_timeline(
    times: Sequence[dt.datetime], ratios: Sequence[float], verdicts: Sequence[str], statuses: Sequence[str | None] | None = None
) -> Drawing:
    """Each change point at the time of the first run after it, by how much (ratio before / after, log scale),
    the unconfirmed ones (status candidate) faint; the legend below the plot, where it hides no point."""
    statuses = statuses if statuses is not None else [None] * len(times)
    verdicts = [f"{v} (unconfirmed)" if s == "candidate" else v for v, s in zip(verdicts, statuses, strict=True)]
    width, height = 810, 306
    left, right, top, bottom = 62, width - 16, 10, height - 50
    canvas = Canvas(width, height)
    groups = {
        verdict: [
            (t.timestamp(), r)
            for t, r, v in zip(times, ratios, verdicts, strict=True)
            if v == verdict and t is not None and r and r > 0 and math.isfinite(r)
        ]
        for verdict, _ in KINDS
    }
    stamps = [t for points in groups.values() for t, _ in points]
    x = Axis.fit(stamps or [0.0], left, right, margin=0.04)
    if not stamps:
        x = Axis(-86400.0, 86400.0, left, right)
    y = Axis.fit([r for points in groups.values() for _, r in points] + [1.0], bottom, top, base=2)
    x_ticks = _time_ticks(x, sorted(set(stamps)))
    y_ticks = [2.0**k for k in range(math.floor(y.lo), math.ceil(y.hi) + 1) if y.holds(2.0**k)]
    grid = "".join(f"M{num(x(t))} {top}V{bottom}" for t, _ in x_ticks)
    grid += "".join(f"M{left} {num(y(v))}H{right}" for v in y_ticks)
    canvas.path(grid, GRID, 0.6)
    canvas.path("".join(f"M{left - 3} {num(y(v))}h3" for v in y_ticks) + "".join(f"M{num(x(t))} {bottom}v3" for t, _ in x_ticks), INK, 0.8)
    for v in y_ticks:
        canvas.text(left - 5, y(v), f"{v:g}x", size=TICK_SIZE, anchor="end", middle=True)
    for t, label in x_ticks:
        canvas.text(x(t), bottom + 14, label, size=TICK_SIZE, anchor="middle")
    canvas.line([(left, y(1.0)), (right, y(1.0))], BASELINE, 0.8, extra=' stroke-dasharray="4 2"')
    for verdict, color in KINDS:
        canvas.dots([(x(t), y(r)) for t, r in groups[verdict]], color, size=5, opacity=_opacity(verdict))
    canvas.rect(left, top, right - left, bottom - top, stroke=INK)
    canvas.text(16, (top + bottom) / 2, "before / after (above 1: better)", size=TICK_SIZE, anchor="middle", middle=True, angle=-90)
    shown = [(verdict, color) for verdict, color in KINDS if groups[verdict]]
    for i, (verdict, color) in enumerate(shown):
        canvas.dots([(left + 14 + 185 * i, height - 12)], color, size=5, opacity=_opacity(verdict))
        canvas.text(left + 24 + 185 * i, height - 12, f"{verdict} ({len(groups[verdict])})", size=LABEL_SIZE, middle=True)
    if not shown:
        canvas.text((left + right) / 2, (top + bottom) / 2, "no change point", anchor="middle", middle=True, color=MUTED)
    return canvas.drawing()


KINDS = (*VERDICT_COLORS, *((f"{verdict} (unconfirmed)", color) for verdict, color in VERDICT_COLORS))


def _opacity(kind: str) -> float:
    return CANDIDATE_OPACITY if kind.endswith("(unconfirmed)") else 0.8


def _time_ticks(axis: Axis, stamps: list[float], most: int = 10) -> list[tuple[float, str]]:
    """Month starts a round number of months apart inside the axis; the days of the points themselves
    when the axis spans less than a month."""
    low = dt.datetime.fromtimestamp(axis.lo, dt.UTC)
    high = dt.datetime.fromtimestamp(axis.hi, dt.UTC)
    first, last = low.year * 12 + low.month, high.year * 12 + high.month - 1  # the month after low's start
    for step in (1, 2, 3, 4, 6, 12, 24, 60):
        months = [m for m in range(first, last + 1) if m % step == 0]
        if len(months) <= most:
            break
    ticks = [dt.datetime(m // 12, m % 12 + 1, 1, tzinfo=dt.UTC) for m in months]
    if ticks:
        return [(t.timestamp(), t.strftime("%Y-%m")) for t in ticks]
    days = list(dict.fromkeys(dt.datetime.fromtimestamp(s, dt.UTC).strftime("%Y-%m-%d") for s in stamps))
    at = [(dt.datetime.strptime(d, "%Y-%m-%d").replace(tzinfo=dt.UTC).timestamp(), d) for d in days[:most]]
    return [(t, d) for t, d in at if axis.holds(t)]
