"""SVG written as text: the few shapes, texts, scales and ticks the report's pictures need.

Every text passes `escape`, so names from the data may hold any character; coordinates
are rounded to a tenth of a pixel, which keeps hundreds of pictures small. No drawing
library: a chart is a few hundred lines of markup, written in well under a millisecond.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipelines.core import display

NAMESPACE = "http://www.w3.org/2000/svg"
FONT = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
EM = 0.6  # a character's average width in ems, near enough to size margins and legends
# Characters XML 1.0 cannot hold at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# A line of text in a picture, and the lines of one text: longer ones are cut (`label`), and margins
# are sized from the cut text (`text_width`), so a name of megabytes draws as a picture of pixels.
LABEL_MAX = 160
LINES_MAX = 8


def label(line: str) -> str:
    """One line of text as a picture shows it: at most LABEL_MAX characters."""
    return display.shorten(line, LABEL_MAX)


def escape(value: object) -> str:
    """Any value as XML text (also safe inside a quoted attribute)."""
    text = _NOT_XML.sub("\ufffd", str(value))
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def num(value: float) -> str:
    """A coordinate to a tenth of a pixel, without a trailing `.0`."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def text_width(text: str, size: float) -> float:
    return EM * size * len(label(text))


def _coordinates(points: Iterable[tuple[float, float]]) -> list[str]:
    return [f"{num(x)} {num(y)}" for x, y in points]


@dataclass(frozen=True)
class Drawing:
    """A finished picture: the SVG document and its size in pixels."""

    markup: str
    width: int
    height: int


class Canvas:
    """Shapes and texts appended in paint order; `drawing()` wraps them into one document."""

    def __init__(self, width: float, height: float):
        self.width, self.height = math.ceil(width), math.ceil(height)
        self.defs: list[str] = []
        self.parts: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, fill: str = "none", stroke: str | None = None) -> None:
        edge = f' stroke="{stroke}" stroke-width="0.8"' if stroke else ""
        self.parts.append(f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" fill="{fill}"{edge}/>')

    def path(self, d: str, stroke: str = "none", width: float = 1.0, fill: str = "none", extra: str = "") -> None:
        if d:
            self.parts.append(f'<path d="{d}" stroke="{stroke}" stroke-width="{width:g}" fill="{fill}"{extra}/>')

    def line(self, points: Iterable[tuple[float, float]], color: str, width: float = 1.3, extra: str = "") -> None:
        """A polyline through the points (nothing for fewer than two)."""
        self._line(_coordinates(points), color, width, extra)

    def dots(self, points: Iterable[tuple[float, float]], color: str, size: float = 5.0, opacity: float = 1.0) -> None:
        """A round dot at each point: zero-length segments with round caps, one path for all."""
        self._dots(_coordinates(points), color, size, opacity)

    def line_with_dots(self, points: Iterable[tuple[float, float]], color: str, size: float = 5.0, extra: str = "") -> None:
        """`line(points, color, extra=extra)`, then `dots(points, color, size)`: each point written once for both
        (the report's charts write hundreds of thousands of coordinates)."""
        coordinates = _coordinates(points)
        self._line(coordinates, color, 1.3, extra)
        self._dots(coordinates, color, size, 1.0)

    def _line(self, coordinates: list[str], color: str, width: float, extra: str) -> None:
        if len(coordinates) > 1:
            self.path("M" + "L".join(coordinates), color, width, extra=extra)

    def _dots(self, coordinates: list[str], color: str, size: float, opacity: float) -> None:
        d = "".join(f"M{point}h0" for point in coordinates)
        alpha = f' stroke-opacity="{opacity:g}"' if opacity < 1 else ""
        self.path(d, color, size, extra=f' stroke-linecap="round"{alpha}')

    def text(
        self,
        x: float,
        y: float,
        content: str,
        size: float = 10,
        anchor: str = "start",
        middle: bool = False,
        angle: float = 0,
        color: str | None = None,
    ) -> None:
        """A text at (x, y): its baseline there, or its middle when `middle`; rotated about (x, y) by `angle`
        degrees (negative: counterclockwise); lines of a multi-line text stack downwards."""
        attrs = f' font-size="{size:g}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if middle:
            attrs += ' dominant-baseline="central"'
        if angle:
            attrs += f' transform="rotate({angle:g} {num(x)} {num(y)})"'
        if color:
            attrs += f' fill="{color}"'
        lines = [label(line) for line in content[: LINES_MAX * (LABEL_MAX + 1)].split("\n")[:LINES_MAX]]
        if len(lines) == 1:
            body = escape(lines[0])
        else:
            # Centered as a block when `middle`: the first line moves up by half the others.
            first = -0.6 * (len(lines) - 1) if middle else 0
            body = "".join(
                f'<tspan x="{num(x)}" dy="{(first if i == 0 else 1.2):g}em">{escape(line)}</tspan>' for i, line in enumerate(lines)
            )
        self.parts.append(f'<text x="{num(x)}" y="{num(y)}"{attrs}>{body}</text>')

    def drawing(self) -> Drawing:
        defs = f"<defs>{''.join(self.defs)}</defs>" if self.defs else ""
        markup = (
            f'<svg xmlns="{NAMESPACE}" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" font-family="{FONT}" font-size="10">'
            f'{defs}<rect width="100%" height="100%" fill="#fff"/>{"".join(self.parts)}</svg>\n'
        )
        return Drawing(markup, self.width, self.height)


@dataclass(frozen=True)
class Axis:
    """Data values to pixels, linearly or on a log scale (`base`); `lo` and `hi` are in the scale's own units."""

    lo: float
    hi: float
    start: float  # the pixel of lo
    end: float  # the pixel of hi
    base: float | None = None

    @classmethod
    def fit(cls, values: Iterable[float], start: float, end: float, base: float | None = None, margin: float = 0.05) -> Axis:
        """An axis over the values with `margin` of their span either side (the finite, and positive on a log axis)."""
        scaled = [math.log(v, base) if base else v for v in values if math.isfinite(v) and (not base or v > 0)]
        if not scaled:
            scaled = [0.0 if base else 1.0]
        lo, hi = min(scaled), max(scaled)
        pad = (hi - lo) * margin if hi > lo else max(abs(lo) * 0.1, 0.5)
        return cls(lo - pad, hi + pad, start, end, base)

    def from_zero(self) -> Axis:
        """The same axis starting at zero (a linear axis of positive values): a memory of 2,561 MiB against
        2,564 MiB is drawn as the 0.1% it is, not as a gap across the plot."""
        if self.base or self.lo <= 0 or self.hi <= 0:
            return self
        return Axis(0.0, self.hi, self.start, self.end)

    def scaled(self, value: float) -> float:
        return math.log(value, self.base) if self.base else value

    def __call__(self, value: float) -> float:
        return self.start + (self.scaled(value) - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    def at(self, value: float) -> float | None:
        """The pixel of `value`, None where the axis does not hold it: `holds` and the axis in one, the scale's
        logarithm taken once."""
        if self.base and value <= 0:
            return None
        scaled = self.scaled(value)
        if not self.lo - 1e-9 <= scaled <= self.hi + 1e-9:
            return None
        return self.start + (scaled - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    def holds(self, value: float) -> bool:
        if self.base and value <= 0:
            return False
        return self.lo - 1e-9 <= self.scaled(value) <= self.hi + 1e-9

    @property
    def data_range(self) -> tuple[float, float]:
        if self.base:
            return self.base**self.lo, self.base**self.hi
        return self.lo, self.hi


def nice_ticks(axis: Axis, most: int) -> list[float]:
    """At most `most` intervals of a round step (1, 2, 2.5 or 5 times a power of ten) inside a linear axis."""
    lo, hi = axis.lo, axis.hi
    raw = (hi - lo) / most
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    i = first
    while i * step <= hi + step * 1e-9:
        ticks.append(round(i * step, 12))
        i += 1
    return ticks


def log_ticks(axis: Axis, most: int = 8) -> list[float]:
    """1, 2 and 5 times each power of ten inside a log-10 axis, so a range under a decade still gets a few;
    only the powers of ten (then every other one) when that makes too many."""
    low, high = axis.data_range
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    for mantissas, every in (((1, 2, 5), 1), ((1,), 1), ((1,), 2), ((1,), 5)):
        ticks = [m * 10.0**d for d in decades if d % every == 0 for m in mantissas]
        ticks = [t for t in ticks if axis.holds(t)]
        if len(ticks) <= most:
            return ticks
    return ticks


def number(value: float) -> str:
    """A tick's label: `:g` of the value rounded past float noise (0.30000000000000004 is 0.3)."""
    return f"{round(value, 10):g}"


def mix(stops: Sequence[str], t: float) -> str:
    """The color at `t` (0 to 1) of a ramp through evenly spaced `#rrggbb` stops."""
    t = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(t), len(stops) - 2)
    f = t - i
    a, b = stops[i], stops[i + 1]
    channels = (round(int(a[k : k + 2], 16) * (1 - f) + int(b[k : k + 2], 16) * f) for k in (1, 3, 5))
    return "#" + "".join(f"{c:02x}" for c in channels)


def gradient(name: str, stops: Sequence[str]) -> str:
    """A vertical linearGradient, the last stop at the top."""
    marks = "".join(f'<stop offset="{i / (len(stops) - 1):.3f}" stop-color="{color}"/>' for i, color in enumerate(reversed(stops)))
    return f'<linearGradient id="{name}" x1="0" y1="0" x2="0" y2="1">{marks}</linearGradient>'
