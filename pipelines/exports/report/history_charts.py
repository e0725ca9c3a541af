"""The history charts of a kernel's page: each series over the benchmarked commits of upstream's CI
(x: the commits in the order they were benchmarked, y: the value), one small multiple per workload,
one line per implementation, and the series' change points marked where they happened.

A change point is drawn as a vertical line between the last commit before the shift and the first
after it, red for a regression and blue for an improvement, dashed when the cause is the host (the
group's baseline moved alike), with its ratio (before / after) at the top and a ring on the first
point after it. An unconfirmed one (a candidate: the newest one or two commits) is dotted and faint,
its ratio followed by `?`. Laid out in pixels by plain Python (`svg`), like the sweep charts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pipelines.exports.report import svg
from pipelines.exports.report.implementations import Style
from pipelines.exports.report.legend import Legend
from pipelines.exports.report.style import GRID, INK, LABEL_SIZE, MUTED, TICK_SIZE
from pipelines.exports.report.svg import Axis, Canvas, Drawing, num, text_width
from pipelines.exports.report.sweeps import wrap
from pipelines.exports.report.timeline import IMPROVED, REGRESSED

COLUMNS = 2
COLUMN_WIDTH = 470
PLOT_LEFT, PLOT_RIGHT = 62, 14
PLOT_HEIGHT = 170
TITLE_SIZE, TITLE_LINE = 9, 12
X_LABEL_ANGLE = 40
X_TICKS_MOST = 14
NOTE_HEIGHT = 20
MARK_LABEL = 8.5
MARK_LEVELS = 3  # rows of change-point labels at the top of a panel
WIDE = 3  # a panel whose values span this factor or more gets a log axis, where equal shifts look equal


@dataclass(frozen=True)
class Line:
    """One implementation's points in one panel: (commit index, value), in the order observed."""

    implementation: str
    points: list[tuple[int, float]]


@dataclass(frozen=True)
class Mark:
    """A change point of one of the panel's lines, between commit indexes `before` and `after`."""

    implementation: str
    before: int
    after: int
    after_value: float | None
    ratio: float | None
    verdict: str  # improved | regressed
    cause: str  # code | host
    candidate: bool = False  # unconfirmed: too few commits after it yet


@dataclass
class Panel:
    title: str
    lines: list[Line] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)


def history_figure(
    commits: Sequence[str],
    panels: Sequence[Panel],
    unit: str,
    value_label: str,
    styles: Mapping[str, Style],
    note: str = "",
    from_zero: bool = False,
) -> Drawing:
    """The panels in a grid of COLUMNS, sharing the commits along x, one legend for all; `from_zero` (memory)
    starts a linear value axis at zero."""
    columns = max(min(len(panels), COLUMNS), 1)
    blocks = math.ceil(len(panels) / columns)
    ticks = _thin(len(commits))
    tick_room = 14 + max((text_width(commits[i], TICK_SIZE) for i in ticks), default=0) * math.sin(math.radians(X_LABEL_ANGLE))
    title_lines = max((len(p.title.split("\n")) for p in panels), default=1)
    block_height = 8 + TITLE_LINE * title_lines + 4 + PLOT_HEIGHT + tick_room + 26
    width = COLUMN_WIDTH * columns
    implementations = list(dict.fromkeys(line.implementation for p in panels for line in p.lines))
    legend = Legend(implementations, width)
    head = NOTE_HEIGHT if note else 0
    canvas = Canvas(width, head + block_height * blocks + legend.height)
    if note:
        canvas.text(PLOT_LEFT, 14, note, size=TITLE_SIZE, color=MUTED)
    for index, panel in enumerate(panels):
        row, column = divmod(index, columns)
        top = head + row * block_height
        _draw_panel(canvas, column * COLUMN_WIDTH, top, title_lines, panel, commits, ticks, f"{value_label} ({unit})", styles, from_zero)
    legend.draw(canvas, head + block_height * blocks, styles)
    return canvas.drawing()


def _thin(count: int) -> list[int]:
    """The commit indexes that get a label: at most X_TICKS_MOST, evenly spaced, the newest always."""
    if count <= X_TICKS_MOST:
        return list(range(count))
    step = math.ceil(count / X_TICKS_MOST)
    return sorted({*range(count - 1, -1, -step)})


def _draw_panel(
    canvas: Canvas,
    left: float,
    top: float,
    title_lines: int,
    panel: Panel,
    commits: Sequence[str],
    ticks: list[int],
    value_label: str,
    styles: Mapping[str, Style],
    from_zero: bool = False,
) -> None:
    plot_left, plot_right = left + PLOT_LEFT, left + COLUMN_WIDTH - PLOT_RIGHT
    for i, line in enumerate(panel.title.split("\n")):
        canvas.text(plot_left, top + 8 + TITLE_LINE * (i + 1) - 3, line, size=TITLE_SIZE)
    plot_top = top + 8 + TITLE_LINE * title_lines + 4
    plot_bottom = plot_top + PLOT_HEIGHT
    n = max(len(commits), 1)

    def x(index: float) -> float:
        return plot_left + (index + 0.5) / n * (plot_right - plot_left)

    values = [v for line in panel.lines for _, v in line.points]
    positive = [v for v in values if v > 0]
    log_y = len(positive) == len(values) > 1 and max(positive) / min(positive) >= WIDE
    y = Axis.fit(values, plot_bottom, plot_top + 10 * MARK_LEVELS + 2, base=10 if log_y else None, margin=0.06)
    if from_zero:
        y = y.from_zero()
    y_ticks = [t for t in (svg.log_ticks(y) if log_y else svg.nice_ticks(y, 5)) if plot_top <= y(t) <= plot_bottom]
    grid = "".join(f"M{num(x(i))} {num(plot_top)}V{num(plot_bottom)}" for i in ticks)
    grid += "".join(f"M{num(plot_left)} {num(y(t))}H{num(plot_right)}" for t in y_ticks)
    canvas.path(grid, GRID, 0.6)
    marks = "".join(f"M{num(plot_left - 3)} {num(y(t))}h3" for t in y_ticks) + "".join(f"M{num(x(i))} {num(plot_bottom)}v3" for i in ticks)
    canvas.path(marks, INK, 0.8)
    for t in y_ticks:
        canvas.text(plot_left - 5, y(t), svg.number(t), size=TICK_SIZE, anchor="end", middle=True)

    levels: list[list[tuple[float, float]]] = [[] for _ in range(MARK_LEVELS)]
    for mark in panel.marks:
        color = REGRESSED if mark.verdict == "regressed" else IMPROVED
        at = (x(mark.before) + x(mark.after)) / 2
        dash = ' stroke-dasharray="3 2"' if mark.cause == "host" else ""
        if mark.candidate:
            dash = ' stroke-dasharray="1 2" stroke-opacity="0.6"'
        canvas.line([(at, plot_top), (at, plot_bottom)], color, 1.1, extra=dash)
        if mark.after_value is not None and y.holds(mark.after_value):
            canvas.dots([(x(mark.after), y(mark.after_value))], color, size=10, opacity=0.6)
        if mark.ratio is None or not math.isfinite(mark.ratio):
            continue  # the line says where; a ratio the table cannot give is not drawn either
        label = f"{mark.ratio:.2f}x" + ("?" if mark.candidate else "")
        width = 2 + text_width(label, MARK_LABEL)
        # Right of the line; left of it near the plot's right edge, where the newest commits' steps are.
        span = (at + 1, at + 1 + width) if at + 1 + width <= plot_right else (at - 1 - width, at - 1)
        # The first row of labels where this one overlaps none; none when all are taken (the page's table lists it).
        free = next((row for row in levels if all(span[1] < a or span[0] > b for a, b in row)), None)
        if free is not None and span[0] >= plot_left:
            free.append(span)
            canvas.text(span[0], plot_top + 9 + 10 * levels.index(free), label, size=MARK_LABEL, color=color)
    for line in panel.lines:
        style = styles.get(line.implementation, Style("black"))
        placed = ((i, y.at(v)) for i, v in line.points)
        canvas.line_with_dots([(x(i), at) for i, at in placed if at is not None], style.color, size=4, extra=style.dash_attribute)

    canvas.rect(plot_left, plot_top, plot_right - plot_left, PLOT_HEIGHT, stroke=INK)
    for i in ticks:
        canvas.text(x(i) + 3, plot_bottom + 12, commits[i], size=TICK_SIZE, anchor="end", angle=-X_LABEL_ANGLE)
    canvas.text(left + 20, (plot_top + plot_bottom) / 2, value_label, size=LABEL_SIZE - 1, anchor="middle", middle=True, angle=-90)


def panel_title(workload: str) -> str:
    return wrap(workload, width=72, most=150)
