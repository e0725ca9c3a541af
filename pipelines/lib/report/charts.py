"""The report's pictures, drawn by matplotlib's Agg backend into PNG bytes (no display, no network).

Each function takes plain data (lists and dicts from `pipelines.lib.report.data`)
and returns the encoded image; every figure is closed before returning, so
hundreds of charts do not pile up in memory.
"""

from __future__ import annotations

import functools
import io
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib import colors as mcolors  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

DPI = 90
PANEL_COLUMNS = 3
# Heat maps show log2(ratio) clipped to [1/CLIP, CLIP]: beyond 4x a cell is simply saturated.
CLIP = 4.0
HEAT_MAP = "RdBu"
NO_DATA = "#eeeeee"
CHAR_WIDTH = 0.065  # inches per character of an 8 pt label, near enough to size margins
LABEL_ANGLE = 35
# Set once for every chart rather than per axis: per-axis tick settings rebuild the ticks.
STYLE = {
    "font.size": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "axes.grid": True,
    "grid.linewidth": 0.3,
    "grid.alpha": 0.6,
    "lines.linewidth": 1.2,
    "lines.markersize": 3,
    "axes.xmargin": 0.04,
    "savefig.dpi": DPI,
}


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


def _styled(draw: Callable[..., bytes]) -> Callable[..., bytes]:
    @functools.wraps(draw)
    def styled(*args, **kwargs) -> bytes:
        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)

    return styled


def provider_colors(providers: Sequence[str]) -> dict[str, str]:
    """A color per provider, in the order given: tab10 for the first ten, tab20's light half after."""
    palette = list(plt.get_cmap("tab10").colors) + list(plt.get_cmap("tab20").colors[1::2])
    return {provider: mcolors.to_hex(palette[i % len(palette)]) for i, provider in enumerate(providers)}


@_styled
def sweep_figure(sweeps: Sequence[Sweep], unit: str, value_label: str, colors: Mapping[str, str]) -> bytes:
    """Each sweep as a column: values with their p20-p80 band on top (upstream's picture), ratios below.

    The layout is fixed in inches rather than computed (constrained layout costs
    more than the drawing), and ticks sit at the sweep's own x values.
    """
    columns = min(len(sweeps), PANEL_COLUMNS)
    blocks = math.ceil(len(sweeps) / columns)
    providers = list(dict.fromkeys(series.provider for sweep in sweeps for series in sweep.series))
    width, block_height = 4.6 * columns, 4.4
    # The legend gets as many rows as its names need at this width.
    legend_column = 0.55 + CHAR_WIDTH * max((len(p) for p in providers), default=1)
    legend_columns = max(1, min(len(providers), int((width - 0.2) / legend_column)))
    legend_height = 0.15 + 0.2 * math.ceil(len(providers) / legend_columns)
    height = block_height * blocks + legend_height
    figure = Figure(figsize=(width, height), dpi=DPI)
    outer = figure.add_gridspec(
        blocks, columns, left=0.62 / width, right=1 - 0.12 / width, top=1 - 0.45 / height,
        bottom=(legend_height + 0.6) / height, wspace=0.28, hspace=0.9 / block_height,
    )  # fmt: skip
    for index, sweep in enumerate(sweeps):
        inner = outer[divmod(index, columns)].subgridspec(2, 1, height_ratios=[2.2, 1.0], hspace=0.08)
        _draw_sweep(figure.add_subplot(inner[0]), figure.add_subplot(inner[1]), sweep, unit, value_label, colors)
    handles = [Line2D([], [], color=colors.get(p, "black"), marker="o", label=p) for p in providers]
    figure.legend(
        handles=handles, loc="lower center", ncols=legend_columns, fontsize=8, frameon=False,
        bbox_to_anchor=(0.5, 0.0), columnspacing=1.0, handlelength=1.5,
    )  # fmt: skip
    return _png(figure)


def _draw_sweep(top, bottom, sweep: Sweep, unit: str, value_label: str, colors: Mapping[str, str]) -> None:
    positions, log_x = _x_axis([x for series in sweep.series for x in series.x])
    values = []
    for series in sweep.series:
        color = colors.get(series.provider, "black")
        xs = [positions[x] for x in series.x]
        top.plot(xs, series.value, marker="o", color=color)
        values.extend(v for v in series.value if v is not None)
        band = [(x, lo, hi) for x, lo, hi in zip(xs, series.p20, series.p80, strict=True)
                if lo is not None and hi is not None]  # fmt: skip
        if band:
            bx, lo, hi = zip(*band, strict=True)
            top.fill_between(bx, lo, hi, color=color, alpha=0.2, linewidth=0)
        ratios = [(x, r) for x, r in zip(xs, series.ratio, strict=True) if r is not None]
        if ratios:
            rx, ry = zip(*ratios, strict=True)
            bottom.plot(rx, ry, marker="o", color=color)
    bottom.axhline(1.0, color="#555555", linewidth=0.8, linestyle="--")
    # A text, not set_title: placing a title means measuring the axes' ticks, which costs a redraw.
    top.text(0.0, 1.03, sweep.title, transform=top.transAxes, fontsize=8, va="bottom")
    top.set_ylabel(f"{value_label} ({unit})")
    bottom.set_ylabel("ratio to baseline")
    bottom.set_xlabel(sweep.x_label)
    # Few y ticks: each tick is a handful of artists, and drawing ticks is most of a chart's cost.
    top.yaxis.set_major_locator(MaxNLocator(nbins=5))
    bottom.yaxis.set_major_locator(MaxNLocator(nbins=3))
    if _is_wide(values):
        top.set_yscale("log")
        # 1-2-5 steps, so even a range narrower than a decade gets a few labels.
        top.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        top.yaxis.set_major_formatter(FuncFormatter(_plain_number))
        top.yaxis.set_minor_locator(NullLocator())
    ticks = _thin(list(positions.items()))
    for axis in (top, bottom):
        if log_x:
            axis.set_xscale("log", base=2)
            axis.xaxis.set_minor_locator(NullLocator())
        axis.set_xticks([at for _, at in ticks], [label for label, _ in ticks] if axis is bottom else [])
        axis.set_xlim(top.get_xlim())
    if any(len(label) > 5 for label, _ in ticks):
        for label in bottom.get_xticklabels():
            label.set(rotation=30, ha="right")


def _plain_number(value: float, _position: int) -> str:
    return f"{value:g}"


def _times(value: float, _position: int) -> str:
    return f"{value:g}x"


def _is_wide(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return len(positive) == len(values) and len(positive) > 1 and max(positive) / min(positive) >= 30


def _thin(ticks: list[tuple[str, float]], most: int = 9) -> list[tuple[str, float]]:
    step = math.ceil(len(ticks) / most)
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


@dataclass(frozen=True)
class _HeatPanel:
    label: str
    rows: list[str]
    columns: list[str]
    cells: dict[tuple[str, str], tuple[float, str]]  # (row, column) -> (ratio, text)


@_styled
def scorecard_heatmap(cells: Sequence[HeatCell], title: str) -> bytes:
    """Rows (kernel · pass) by provider, colored by log2 of the geometric-mean ratio; each cell
    also shows the ratio and its wins and losses."""
    panel = _HeatPanel(
        "",
        list(dict.fromkeys(cell.row for cell in cells)),
        sorted({cell.provider for cell in cells}),
        {(c.row, c.provider): (c.geomean_ratio, f"{c.geomean_ratio:.2f}  {c.wins}/{c.losses}") for c in cells},
    )
    return _heat_figure(title, [panel], cell_size=(1.0, 0.24), fontsize=6.5)


@_styled
def summary_heatmap(panels: Mapping[str, Sequence[HeatCell]], title: str) -> bytes:
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
    return _heat_figure(title, heat_panels, cell_size=(0.62, 0.34), fontsize=6)




def _heat_figure(title: str, panels: Sequence[_HeatPanel], cell_size: tuple[float, float], fontsize: float) -> bytes:
    """Heat maps side by side sharing their rows, in a layout fixed in inches (labels sized by their length)."""
    cell_w, cell_h = cell_size
    rows = max((len(p.rows) for p in panels), default=1) or 1
    row_label = max((len(label) for p in panels for label in p.rows), default=1)
    column_label = max((len(label) for p in panels for label in p.columns), default=1)
    slant = math.radians(LABEL_ANGLE)
    left = 0.25 + CHAR_WIDTH * row_label
    top = 0.45 + CHAR_WIDTH * column_label * math.sin(slant)
    bottom, gap, bar = (0.35 if any(p.label for p in panels) else 0.15), 0.3, 1.0
    overhang = CHAR_WIDTH * column_label * math.cos(slant)
    widths = [cell_w * max(len(p.columns), 1) for p in panels]
    width = left + sum(widths) + gap * (len(panels) - 1) + max(overhang - cell_w / 2, 0) + bar
    height = top + rows * cell_h + bottom
    figure = Figure(figsize=(width, height), dpi=DPI)
    figure.suptitle(title, x=0.01, y=1 - 0.08 / height, ha="left", va="top", fontsize=9)
    image, x = None, left
    for index, (panel, panel_width) in enumerate(zip(panels, widths, strict=True)):
        axis = figure.add_axes((x / width, bottom / height, panel_width / width, rows * cell_h / height))
        grid = [[_clipped_log2(panel.cells[(r, c)][0]) if (r, c) in panel.cells else math.nan for c in panel.columns]
                for r in panel.rows]  # fmt: skip
        image = _heat(axis, grid or [[math.nan]])
        for (r, c), (_, label) in panel.cells.items():
            i, j = panel.rows.index(r), panel.columns.index(c)
            axis.text(j, i, label, ha="center", va="center", fontsize=fontsize, color=_text_color(grid[i][j]))
        axis.set_xticks(range(len(panel.columns)), panel.columns, rotation=LABEL_ANGLE, ha="left", fontsize=7.5)
        axis.xaxis.tick_top()
        axis.set_yticks(range(len(panel.rows)), panel.rows if index == 0 else [], fontsize=7.5)
        axis.tick_params(length=0)
        if panel.label:
            axis.set_xlabel(panel.label, fontsize=9)
        x += panel_width + gap
    if image is not None:
        bar_axis = figure.add_axes(((width - 0.75) / width, bottom / height, 0.12 / width, rows * cell_h / height))
        _colorbar(figure, image, bar_axis)
    return _png(figure)


def _clipped_log2(ratio: float) -> float:
    if not ratio or ratio <= 0 or not math.isfinite(ratio):
        return math.nan
    return max(-math.log2(CLIP), min(math.log2(CLIP), math.log2(ratio)))


def _heat(axis, grid: list[list[float]]):
    cmap = plt.get_cmap(HEAT_MAP).with_extremes(bad=NO_DATA)
    limit = math.log2(CLIP)
    image = axis.imshow(grid, cmap=cmap, vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    axis.grid(False)
    axis.set_xticks([])
    axis.set_yticks([])
    for side in axis.spines.values():
        side.set_visible(False)
    return image


def _text_color(log_ratio: float) -> str:
    return "white" if not math.isnan(log_ratio) and abs(log_ratio) > 1.1 else "black"


def _colorbar(figure: Figure, image, cax) -> None:
    limit = int(math.log2(CLIP))
    bar = figure.colorbar(image, cax=cax)
    ticks = list(range(-limit, limit + 1))
    bar.set_ticks(ticks, labels=[f"{2.0**t:g}x" for t in ticks], fontsize=7)
    bar.set_label("ratio to baseline (above 1: better)", fontsize=7)


@_styled
def changes_timeline(times: Sequence, ratios: Sequence[float], verdicts: Sequence[str]) -> bytes:
    """Each regression and improvement at the time of its newer run, by how much (ratio, log scale)."""
    figure = Figure(figsize=(9, 3.2), dpi=DPI, layout="constrained")
    axis = figure.add_subplot()
    plotted = False
    for verdict, color in (("improved", "#2166ac"), ("regressed", "#b2182b")):
        points = [(t, r) for t, r, v in zip(times, ratios, verdicts, strict=True) if v == verdict and r]
        if points:
            xs, ys = zip(*points, strict=True)
            axis.scatter(xs, ys, s=12, color=color, label=f"{verdict} ({len(points)})", alpha=0.8)
            plotted = True
    axis.axhline(1.0, color="#555555", linewidth=0.8, linestyle="--")
    axis.set_yscale("log", base=2)
    axis.yaxis.set_major_formatter(FuncFormatter(_times))
    axis.yaxis.set_minor_locator(NullLocator())
    axis.set_ylabel("previous / new (above 1: better)")
    if plotted:
        axis.legend(frameon=False)
    else:
        axis.text(0.5, 0.5, "no regression or improvement", transform=axis.transAxes, ha="center", color="#666666")
    return _png(figure)


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def wrap(text: str, width: int = 60) -> str:
    return "\n".join(textwrap.wrap(text, width)) or text
