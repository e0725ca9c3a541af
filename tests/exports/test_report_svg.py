"""The report's SVG helpers (pipelines/exports/report/svg.py): the shortcuts the charts take write what the plain calls
write."""

from __future__ import annotations

import math

from pipelines.exports.report.svg import Axis, Canvas

VALUES = [-2.0, 0.0, 1e-9, 0.3, 1.0, 7.77, 12.5, 99.0, 1000.0, 5e5, math.inf, math.nan]


def test_an_axis_places_a_value_where_it_holds_and_draws_it_and_nowhere_else():
    for axis in (Axis(0.0, 100.0, 200.0, 10.0), Axis(-1.0, 3.0, 200.0, 10.0, base=10), Axis(0.0, 10.0, 5.0, 400.0, base=2)):
        for value in VALUES:
            expected = axis(value) if axis.holds(value) else None
            assert axis.at(value) == expected, (axis, value)


def test_a_line_with_dots_is_the_line_then_the_dots():
    points = [(0.04, 10.0), (12.35, 7.25), (100.0, -3.05), (250.96, 0.0)]
    for given in (points, points[:1], []):
        plain, joined = Canvas(300, 200), Canvas(300, 200)
        plain.line(given, "#123456", extra=' stroke-dasharray="4 2"')
        plain.dots(given, "#123456", size=4)
        joined.line_with_dots(given, "#123456", size=4, extra=' stroke-dasharray="4 2"')
        assert joined.drawing() == plain.drawing()
