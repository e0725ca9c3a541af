"""The legend the report's charts share: implementations listed under their family (`implementations`),
each with its line (color and dash) and dot, in as many rows as the names need at the picture's width."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pipelines.exports.report.implementations import Style, group
from pipelines.exports.report.style import LABEL_SIZE, MUTED
from pipelines.exports.report.svg import Canvas, text_width

ROW = 16
SAMPLE = 26  # the line sample and the gap before its name


class Legend:
    """One row (or more) per family: the family's name, then each implementation of it."""

    def __init__(self, implementations: Sequence[str], width: float):
        self.width = width
        self.families = group(implementations)
        self.head = 10 + max((text_width(f + ":", LABEL_SIZE) for f in self.families), default=0)
        self.cell = SAMPLE + 10 + max((text_width(name, LABEL_SIZE) for name in implementations), default=10)
        self.per_row = max(1, int((width - 20 - self.head) // self.cell))
        self.rows = sum(math.ceil(len(members) / self.per_row) for members in self.families.values())
        self.height = 10 + ROW * self.rows

    def draw(self, canvas: Canvas, top: float, styles: Mapping[str, Style]) -> None:
        used = min(self.per_row, max((len(m) for m in self.families.values()), default=1))
        start = max((self.width - self.head - used * self.cell) / 2, 8)
        row = 0
        for family, members in self.families.items():
            y = top + 4 + ROW * row + ROW / 2
            canvas.text(start, y, family + ":", size=LABEL_SIZE, middle=True, color=MUTED)
            for i, name in enumerate(members):
                line, column = divmod(i, self.per_row)
                x, y = start + self.head + column * self.cell, top + 4 + ROW * (row + line) + ROW / 2
                style = styles.get(name, Style("black"))
                canvas.line([(x, y), (x + 20, y)], style.color, extra=style.dash_attribute)
                canvas.dots([(x + 10, y)], style.color)
                canvas.text(x + SAMPLE, y, name, size=LABEL_SIZE, middle=True)
            row += math.ceil(len(members) / self.per_row)
