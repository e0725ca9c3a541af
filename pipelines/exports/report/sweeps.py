"""The sweep charts of a kernel's page: per sweep, each provider's values with their p20-p80 band over a
panel of ratios to the baseline, laid out in pixels by plain Python (`svg`).

The layout is fixed in pixels, with margins sized from the length of the labels, so nothing needs measuring.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipelines.core import display
from pipelines.exports.report import svg
from pipelines.exports.report.implementations import Style
from pipelines.exports.report.legend import Legend
from pipelines.exports.report.style import BASELINE, GRID, INK, LABEL_SIZE, MUTED, TICK_SIZE
from pipelines.exports.report.svg import Axis, Canvas, Drawing, num, text_width

# One column per sweep (at most PANEL_COLUMNS side by side), a value panel above a ratio panel.
PANEL_COLUMNS = 3
COLUMN_WIDTH = 414
PLOT_LEFT, PLOT_RIGHT = 62, 14
VALUE_HEIGHT, RATIO_HEIGHT, PANEL_GAP = 190, 86, 7
TITLE_SIZE, TITLE_LINE = 9, 12
X_LABEL_ANGLE = 30
NOTE_HEIGHT = 20


@dataclass(frozen=True)
class Series:
    """One implementation (`provider · backend`) along one sweep: its latest value at each x, with the
    p20-p80 band and the ratio to the group's baseline."""

    provider: str
    x: list[str]
    value: list[float]
    p20: list[float | None]
    p80: list[float | None]
    ratio: list[float | None]


@dataclass(frozen=True)
class Sweep:
    """One small multiple: the runs of a sweep (everything fixed but the x axis)."""

    title: str
    x_label: str
    series: list[Series]


def sweep_figure(
    sweeps: Sequence[Sweep], unit: str, value_label: str, styles: Mapping[str, Style], note: str = "", from_zero: bool = False
) -> Drawing:
    """Each sweep as a column: values with their p20-p80 band on top (upstream's picture), ratios below;
    x ticks at the sweep's own x values, one legend for all (implementations under their family);
    `note`, above the sweeps, names what the ratios are taken against; `from_zero` (memory) starts a linear
    value axis at zero."""
    columns = max(min(len(sweeps), PANEL_COLUMNS), 1)
    blocks = math.ceil(len(sweeps) / columns)
    providers = list(dict.fromkeys(series.provider for sweep in sweeps for series in sweep.series))
    axes = [_x_axis([x for series in sweep.series for x in series.x]) for sweep in sweeps]
    title_lines = max((len(sweep.title.split("\n")) for sweep in sweeps), default=1)
    tick_room = max((_x_tick_room([label for label, _ in _thin(list(positions.items()))]) for positions, _ in axes), default=14)
    block_height = 8 + TITLE_LINE * title_lines + 4 + VALUE_HEIGHT + PANEL_GAP + RATIO_HEIGHT + tick_room + 30
    width = COLUMN_WIDTH * columns
    legend = Legend(providers, width)
    head = NOTE_HEIGHT if note else 0
    canvas = Canvas(width, head + block_height * blocks + legend.height)
    if note:
        canvas.text(PLOT_LEFT, 14, note, size=TITLE_SIZE, color=MUTED)
    for index, (sweep, (positions, log_x)) in enumerate(zip(sweeps, axes, strict=True)):
        row, column = divmod(index, columns)
        _draw_sweep(
            canvas,
            column * COLUMN_WIDTH,
            head + row * block_height,
            (title_lines, tick_room),
            sweep,
            positions,
            log_x,
            from_zero,
            f"{value_label} ({unit})",
            styles,
        )
    legend.draw(canvas, head + block_height * blocks, styles)
    return canvas.drawing()


def _x_tick_room(labels: list[str]) -> float:
    """The height the x tick labels take under the ratio panel (slanted when any is long)."""
    if not any(len(label) > 5 for label in labels):
        return 14
    longest = max(text_width(label, TICK_SIZE) for label in labels)
    return 14 + longest * math.sin(math.radians(X_LABEL_ANGLE))


def _draw_sweep(
    canvas: Canvas,
    left: float,
    top: float,
    rooms: tuple[int, float],
    sweep: Sweep,
    positions: dict[str, float],
    log_x: bool,
    from_zero: bool,
    value_label: str,
    styles: Mapping[str, Style],
) -> None:
    """One sweep in its block; `rooms`: the lines of title and the height of x tick labels, the same across blocks."""
    title_lines, tick_room = rooms
    plot_left, plot_right = left + PLOT_LEFT, left + COLUMN_WIDTH - PLOT_RIGHT
    for i, line in enumerate(sweep.title.split("\n")):
        canvas.text(plot_left, top + 8 + TITLE_LINE * (i + 1) - 3, line, size=TITLE_SIZE)
    value_top = top + 8 + TITLE_LINE * title_lines + 4
    value_bottom = value_top + VALUE_HEIGHT
    ratio_top = value_bottom + PANEL_GAP
    ratio_bottom = ratio_top + RATIO_HEIGHT

    x = Axis.fit(positions.values(), plot_left, plot_right, base=2 if log_x else None, margin=0.04)
    values = [v for series in sweep.series for v in series.value if v is not None]
    log_y = _is_wide(values)
    band = [v for s in sweep.series for v in (*s.p20, *s.p80) if v is not None]
    y = Axis.fit(values + band, value_bottom, value_top, base=10 if log_y else None)
    if from_zero:
        y = y.from_zero()
    ratios = [r for series in sweep.series for r in series.ratio if r is not None]
    r = Axis.fit([*ratios, 1.0], ratio_bottom, ratio_top)

    ticks = _thin(list(positions.items()))
    y_ticks = svg.log_ticks(y) if log_y else svg.nice_ticks(y, 5)
    r_ticks = svg.nice_ticks(r, 3)
    for panel_top, panel_bottom, axis, axis_ticks in ((value_top, value_bottom, y, y_ticks), (ratio_top, ratio_bottom, r, r_ticks)):
        grid = "".join(f"M{num(x(p))} {num(panel_top)}V{num(panel_bottom)}" for _, p in ticks)
        grid += "".join(f"M{num(plot_left)} {num(axis(t))}H{num(plot_right)}" for t in axis_ticks)
        canvas.path(grid, GRID, 0.6)
        marks = "".join(f"M{num(plot_left - 3)} {num(axis(t))}h3" for t in axis_ticks)
        marks += "".join(f"M{num(x(p))} {num(panel_bottom)}v3" for _, p in ticks)
        canvas.path(marks, INK, 0.8)
        for t in axis_ticks:
            canvas.text(plot_left - 5, axis(t), svg.number(t), size=TICK_SIZE, anchor="end", middle=True)
    canvas.line([(plot_left, r(1.0)), (plot_right, r(1.0))], BASELINE, 0.8, extra=' stroke-dasharray="4 2"')

    for series in sweep.series:
        style = styles.get(series.provider, Style("black"))
        color, dash = style.color, style.dash_attribute
        xs = [x(positions[v]) for v in series.x]
        shade = [
            (px, lo, hi)
            for px, lo, hi in zip(xs, series.p20, series.p80, strict=True)
            if lo is not None and hi is not None and y.holds(lo) and y.holds(hi)
        ]
        if shade:
            outline = [(px, y(hi)) for px, _, hi in shade] + [(px, y(lo)) for px, lo, _ in reversed(shade)]
            canvas.path("M" + "L".join(f"{num(a)} {num(b)}" for a, b in outline) + "Z", fill=color, extra=' fill-opacity="0.2"')
        placed = ((px, y.at(v)) for px, v in zip(xs, series.value, strict=True) if v is not None)
        canvas.line_with_dots([(px, at) for px, at in placed if at is not None], color, extra=dash)
        canvas.line_with_dots([(px, r(v)) for px, v in zip(xs, series.ratio, strict=True) if v is not None], color, extra=dash)

    canvas.rect(plot_left, value_top, plot_right - plot_left, VALUE_HEIGHT, stroke=INK)
    canvas.rect(plot_left, ratio_top, plot_right - plot_left, RATIO_HEIGHT, stroke=INK)
    slanted = any(len(label) > 5 for label, _ in ticks)
    for label, p in ticks:
        if slanted:
            canvas.text(x(p) + 3, ratio_bottom + 12, label, size=TICK_SIZE, anchor="end", angle=-X_LABEL_ANGLE)
        else:
            canvas.text(x(p), ratio_bottom + 13, label, size=TICK_SIZE, anchor="middle")
    below = ratio_bottom + tick_room + 12
    canvas.text((plot_left + plot_right) / 2, below, sweep.x_label, size=LABEL_SIZE, anchor="middle")
    for label, (a, b) in ((value_label, (value_top, value_bottom)), ("ratio to baseline", (ratio_top, ratio_bottom))):
        canvas.text(left + 20, (a + b) / 2, label, size=LABEL_SIZE - 1, anchor="middle", middle=True, angle=-90)


def _is_wide(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return len(positive) == len(values) and len(positive) > 1 and max(positive) / min(positive) >= 30


def _thin(ticks: list[tuple[str, float]], most: int = 9) -> list[tuple[str, float]]:
    step = math.ceil(len(ticks) / most) or 1
    return ticks[::step]


def _x_axis(values: Sequence[str]) -> tuple[dict[str, float], bool]:
    """Where each x value sits, in order: numerically when every value is a number (log2 over
    wide ranges), else as categories in the order given."""
    distinct = list(dict.fromkeys(values))
    numbers = {}
    for value in distinct:
        try:
            numbers[value] = float(value)
        except ValueError:
            break
    if len(numbers) == len(distinct) and all(math.isfinite(n) for n in numbers.values()):
        ordered = dict(sorted(numbers.items(), key=lambda item: item[1]))
        return ordered, _is_wide(list(ordered.values()))
    return {value: float(i) for i, value in enumerate(distinct)}, False


def wrap(text: str, width: int = 60, most: int = 240) -> str:
    """`text` in lines of `width`; cut first to `most` characters, so a label of megabytes neither
    stalls the wrapping nor makes a title of thousands of lines."""
    text = display.shorten(text, most)
    return "\n".join(textwrap.wrap(text, width)) or text
