"""The report's pictures as SVG documents, laid out in pixels by plain Python (`svg`).

Each function takes plain data (lists and dicts from `pipelines.lib.report.data`)
and returns an `svg.Drawing`. The layouts are fixed in pixels, with margins sized
from the length of their labels, so nothing needs measuring.
"""

from __future__ import annotations

import datetime as dt
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipelines.lib import display
from pipelines.lib.report import svg
from pipelines.lib.report.svg import Axis, Canvas, Drawing, num, text_width

PANEL_COLUMNS = 3
# Heat maps show log2(ratio) clipped to [1/CLIP, CLIP]: beyond 4x a cell is simply saturated.
CLIP = 4.0
# ColorBrewer's RdBu, red (worse) to blue (better), as matplotlib's "RdBu".
RDBU = ("#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3", "#2166ac", "#053061")
# matplotlib's tab10, then tab20's light half: distinct colors for the first ten providers.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#c7c7c7",
    "#dbdb8d",
    "#9edae5",
)
NO_DATA = "#eeeeee"
GRID = "#dddddd"
INK = "#333333"
MUTED = "#666666"
BASELINE = "#555555"
IMPROVED, REGRESSED = "#2166ac", "#b2182b"
VERDICT_COLORS = (("improved", IMPROVED), ("regressed", REGRESSED))
LABEL_ANGLE = 35
TICK_SIZE = 9
LABEL_SIZE = 10

# The sweep charts: one column per sweep, a value panel above a ratio panel.
COLUMN_WIDTH = 414
PLOT_LEFT, PLOT_RIGHT = 62, 14
VALUE_HEIGHT, RATIO_HEIGHT, PANEL_GAP = 190, 86, 7
TITLE_SIZE, TITLE_LINE = 9, 12
X_LABEL_ANGLE = 30


@dataclass(frozen=True)
class Series:
    """One provider along one sweep: its latest value at each x, with the p20-p80 band and the ratio."""

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


@dataclass(frozen=True)
class HeatCell:
    row: str
    provider: str
    geomean_ratio: float
    wins: int
    losses: int


def provider_colors(providers: Sequence[str]) -> dict[str, str]:
    """A color per provider, in the order given: tab10 for the first ten, tab20's light half after."""
    return {provider: PALETTE[i % len(PALETTE)] for i, provider in enumerate(providers)}


# --- sweeps --------------------------------------------------------------------------------------


def sweep_figure(sweeps: Sequence[Sweep], unit: str, value_label: str, colors: Mapping[str, str]) -> Drawing:
    """Each sweep as a column: values with their p20-p80 band on top (upstream's picture), ratios below;
    x ticks at the sweep's own x values, one legend for all."""
    columns = max(min(len(sweeps), PANEL_COLUMNS), 1)
    blocks = math.ceil(len(sweeps) / columns)
    providers = list(dict.fromkeys(series.provider for sweep in sweeps for series in sweep.series))
    axes = [_x_axis([x for series in sweep.series for x in series.x]) for sweep in sweeps]
    title_lines = max((len(sweep.title.split("\n")) for sweep in sweeps), default=1)
    tick_room = max((_x_tick_room([label for label, _ in _thin(list(positions.items()))]) for positions, _ in axes), default=14)
    block_height = 8 + TITLE_LINE * title_lines + 4 + VALUE_HEIGHT + PANEL_GAP + RATIO_HEIGHT + tick_room + 30
    width = COLUMN_WIDTH * columns
    legend = _Legend(providers, width)
    canvas = Canvas(width, block_height * blocks + legend.height)
    for index, (sweep, (positions, log_x)) in enumerate(zip(sweeps, axes, strict=True)):
        row, column = divmod(index, columns)
        _draw_sweep(
            canvas,
            column * COLUMN_WIDTH,
            row * block_height,
            (title_lines, tick_room),
            sweep,
            positions,
            log_x,
            f"{value_label} ({unit})",
            colors,
        )
    legend.draw(canvas, block_height * blocks, colors)
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
    value_label: str,
    colors: Mapping[str, str],
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
        color = colors.get(series.provider, "black")
        xs = [x(positions[v]) for v in series.x]
        shade = [
            (px, lo, hi)
            for px, lo, hi in zip(xs, series.p20, series.p80, strict=True)
            if lo is not None and hi is not None and y.holds(lo) and y.holds(hi)
        ]
        if shade:
            outline = [(px, y(hi)) for px, _, hi in shade] + [(px, y(lo)) for px, lo, _ in reversed(shade)]
            canvas.path("M" + "L".join(f"{num(a)} {num(b)}" for a, b in outline) + "Z", fill=color, extra=' fill-opacity="0.2"')
        points = [(px, y(v)) for px, v in zip(xs, series.value, strict=True) if v is not None and y.holds(v)]
        canvas.line(points, color)
        canvas.dots(points, color)
        ratio_points = [(px, r(v)) for px, v in zip(xs, series.ratio, strict=True) if v is not None]
        canvas.line(ratio_points, color)
        canvas.dots(ratio_points, color)

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


class _Legend:
    """Every provider with its line and dot, in as many rows as their names need at this width."""

    ROW = 16

    def __init__(self, providers: list[str], width: float):
        self.providers = providers
        self.column = 34 + max((text_width(p, LABEL_SIZE) for p in providers), default=10)
        self.columns = max(1, min(len(providers), int((width - 20) // self.column)))
        self.rows = math.ceil(len(providers) / self.columns)
        self.width = width
        self.height = 10 + self.ROW * self.rows

    def draw(self, canvas: Canvas, top: float, colors: Mapping[str, str]) -> None:
        start = (self.width - self.columns * self.column) / 2
        for i, provider in enumerate(self.providers):
            row, column = divmod(i, self.columns)
            x, y = start + column * self.column, top + 4 + self.ROW * row + self.ROW / 2
            color = colors.get(provider, "black")
            canvas.line([(x, y), (x + 20, y)], color)
            canvas.dots([(x + 10, y)], color)
            canvas.text(x + 26, y, provider, size=LABEL_SIZE, middle=True)


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


# --- heat maps -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _HeatPanel:
    label: str
    rows: list[str]
    columns: list[str]
    cells: dict[tuple[str, str], tuple[float, str]]  # (row, column) -> (ratio, text)


def scorecard_heatmap(cells: Sequence[HeatCell], title: str) -> Drawing:
    """Rows (kernel · pass) by provider, colored by log2 of the geometric-mean ratio; each cell
    also shows the ratio and its wins and losses."""
    panel = _HeatPanel(
        "",
        list(dict.fromkeys(cell.row for cell in cells)),
        sorted({cell.provider for cell in cells}),
        {(c.row, c.provider): (c.geomean_ratio, f"{c.geomean_ratio:.2f}  {c.wins}/{c.losses}") for c in cells},
    )
    return _heat_figure(title, [panel], cell_size=(90, 22), fontsize=8)


def summary_heatmap(panels: Mapping[str, Sequence[HeatCell]], title: str) -> Drawing:
    """One panel per metric: provider rows by GPU (`HeatCell.row`), each cell the geometric mean
    over that GPU's kernels, with the wins and losses behind it."""
    providers = sorted({cell.provider for cells in panels.values() for cell in cells})
    heat_panels = [
        _HeatPanel(
            label,
            providers,
            sorted({cell.row for cell in cells}),
            {(c.provider, c.row): (c.geomean_ratio, f"{c.geomean_ratio:.2f}\n{c.wins}/{c.losses}") for c in cells},
        )
        for label, cells in panels.items()
        if cells
    ]
    return _heat_figure(title, heat_panels, cell_size=(56, 31), fontsize=7.5)


def _heat_figure(title: str, panels: Sequence[_HeatPanel], cell_size: tuple[float, float], fontsize: float) -> Drawing:
    """Heat maps side by side sharing their rows, column names slanted above, a color bar at the right."""
    cell_w, cell_h = cell_size
    rows = max((len(p.rows) for p in panels), default=1) or 1
    row_label = max((text_width(label, TICK_SIZE) for p in panels for label in p.rows), default=0)
    column_label = max((text_width(label, TICK_SIZE) for p in panels for label in p.columns), default=0)
    slant = math.radians(LABEL_ANGLE)
    left = 16 + row_label
    top = 34 + column_label * math.sin(slant)
    bottom, gap = (26 if any(p.label for p in panels) else 10), 27
    widths = [cell_w * max(len(p.columns), 1) for p in panels]
    overhang = max(column_label * math.cos(slant) - cell_w / 2, 0)
    bar = left + sum(widths) + gap * max(len(panels) - 1, 0) + overhang + 24
    width = max(bar + 76, text_width(title, 11) + 16)
    height = top + rows * cell_h + bottom
    canvas = Canvas(width, height)
    canvas.text(8, 16, title, size=11)
    if not panels:
        canvas.text(width / 2, top + cell_h / 2, "no provider has a baseline to compare with", anchor="middle", middle=True, color=MUTED)
    x = left
    for index, (panel, panel_width) in enumerate(zip(panels, widths, strict=True)):
        _heat_panel(canvas, panel, x, top, panel_width, rows * cell_h, fontsize, row_labels=index == 0)
        x += panel_width + gap
    if panels:
        _color_bar(canvas, bar, top, rows * cell_h)
    return canvas.drawing()


def _heat_panel(
    canvas: Canvas, panel: _HeatPanel, left: float, top: float, width: float, height: float, fontsize: float, row_labels: bool
) -> None:
    w, h = width / max(len(panel.columns), 1), height / max(len(panel.rows), 1)
    canvas.rect(left, top, width, height, fill=NO_DATA)
    row_at = {row: i for i, row in enumerate(panel.rows)}
    column_at = {column: j for j, column in enumerate(panel.columns)}
    for (row, column), (ratio, label) in panel.cells.items():
        i, j = row_at[row], column_at[column]
        level = _clipped_log2(ratio)
        if not math.isnan(level):
            canvas.rect(left + j * w, top + i * h, w, h, fill=_heat_color(level))
        color = "#ffffff" if not math.isnan(level) and abs(level) > 1.1 else "#000000"
        canvas.text(left + (j + 0.5) * w, top + (i + 0.5) * h, label, size=fontsize, anchor="middle", middle=True, color=color)
    for column, j in column_at.items():
        canvas.text(left + (j + 0.5) * w, top - 5, column, size=TICK_SIZE, angle=-LABEL_ANGLE)
    if row_labels:
        for row, i in row_at.items():
            canvas.text(left - 6, top + (i + 0.5) * h, row, size=TICK_SIZE, anchor="end", middle=True)
    if panel.label:
        canvas.text(left + width / 2, top + height + 17, panel.label, size=LABEL_SIZE + 1, anchor="middle")


def _color_bar(canvas: Canvas, left: float, top: float, height: float) -> None:
    """The ratio's color ramp from 1/CLIP (bottom) to CLIP (top), labelled at each power of two."""
    canvas.defs.append(svg.gradient("ratio-ramp", RDBU))
    canvas.rect(left, top, 12, height, fill="url(#ratio-ramp)", stroke=INK)
    limit = int(math.log2(CLIP))
    for power in range(-limit, limit + 1):
        y = top + height * (limit - power) / (2 * limit)
        canvas.path(f"M{num(left + 12)} {num(y)}h3", INK, 0.8)
        canvas.text(left + 18, y, f"{2.0**power:g}x", size=TICK_SIZE, middle=True)
    canvas.text(left + 52, top + height / 2, "ratio to baseline (above 1: better)", size=TICK_SIZE, anchor="middle", middle=True, angle=90)


def _clipped_log2(ratio: float) -> float:
    if not ratio or ratio <= 0 or not math.isfinite(ratio):
        return math.nan
    return max(-math.log2(CLIP), min(math.log2(CLIP), math.log2(ratio)))


def _heat_color(level: float) -> str:
    limit = math.log2(CLIP)
    return svg.mix(RDBU, (level + limit) / (2 * limit))


# --- changes -------------------------------------------------------------------------------------


def changes_timeline(times: Sequence[dt.datetime], ratios: Sequence[float], verdicts: Sequence[str]) -> Drawing:
    """Each regression and improvement at the time of its newer run, by how much (ratio, log scale)."""
    width, height = 810, 288
    left, right, top, bottom = 62, width - 16, 10, height - 32
    canvas = Canvas(width, height)
    groups = {
        verdict: [
            (t.timestamp(), r)
            for t, r, v in zip(times, ratios, verdicts, strict=True)
            if v == verdict and t is not None and r and r > 0 and math.isfinite(r)
        ]
        for verdict, _ in VERDICT_COLORS
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
    for verdict, color in VERDICT_COLORS:
        canvas.dots([(x(t), y(r)) for t, r in groups[verdict]], color, size=5, opacity=0.8)
    canvas.rect(left, top, right - left, bottom - top, stroke=INK)
    canvas.text(16, (top + bottom) / 2, "previous / new (above 1: better)", size=TICK_SIZE, anchor="middle", middle=True, angle=-90)
    shown = [(verdict, color) for verdict, color in VERDICT_COLORS if groups[verdict]]
    for i, (verdict, color) in enumerate(shown):
        canvas.dots([(left + 14, top + 14 + 16 * i)], color, size=5, opacity=0.8)
        canvas.text(left + 24, top + 14 + 16 * i, f"{verdict} ({len(groups[verdict])})", size=LABEL_SIZE, middle=True)
    if not shown:
        canvas.text((left + right) / 2, (top + bottom) / 2, "no regression or improvement", anchor="middle", middle=True, color=MUTED)
    return canvas.drawing()


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
