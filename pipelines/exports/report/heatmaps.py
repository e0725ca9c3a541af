"""The heat maps of the report: the scorecard of one GPU and metric, and the overview's summary, colored by
log2 of the geometric-mean ratio to the baseline, laid out in pixels by plain Python (`svg`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipelines.exports.report import svg
from pipelines.exports.report.style import INK, LABEL_SIZE, MUTED, TICK_SIZE
from pipelines.exports.report.svg import Canvas, Drawing, num, text_width

# Heat maps show log2(ratio) clipped to [1/CLIP, CLIP]: beyond 4x a cell is simply saturated.
CLIP = 4.0
# ColorBrewer's RdBu, red (worse) to blue (better), as matplotlib's "RdBu".
RDBU = ("#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3", "#2166ac", "#053061")
NO_DATA = "#eeeeee"
LABEL_ANGLE = 35


@dataclass(frozen=True)
class HeatCell:
    row: str
    provider: str
    geomean_ratio: float
    wins: int
    losses: int


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
