"""Reading the built report: its pages and tables, and its SVG pictures checked for what is drawn; and the
report of the real data, built once per test module that loads this with `pytest_plugins = ["report_reading"]`."""

from __future__ import annotations

import functools
import re
import urllib.parse
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipelines.core import settings
from pipelines.exports.report import build_report
from pipelines.exports.report.site import ReportSummary
from pipelines.statistics import database_build, db
from pipelines.storage import store

TITLE = "Liger benchmark report"
SVG = "{http://www.w3.org/2000/svg}"


# --- reading the site --------------------------------------------------------------------------


class Page(HTMLParser):
    """What a page holds: its title, element ids, the links and sources it refers to, its text."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path.resolve()  # the report is a link to its build: pages are named by where they are
        self.title = ""
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[dict[str, str]] = []
        self.sources: list[str] = []  # stylesheets and scripts
        self.texts: list[str] = []
        self.h1 = ""
        self._in: list[str] = []
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attributes = {k: v or "" for k, v in attrs}
        if "id" in attributes:
            self.ids.add(attributes["id"])
        if tag == "a" and "href" in attributes:
            self.links.append(attributes["href"])
        if tag == "img":
            self.images.append(attributes)
        if tag in ("link", "script") and (attributes.get("href") or attributes.get("src")):
            self.sources.append(attributes.get("href") or attributes["src"])
        self._in.append(tag)

    def handle_endtag(self, tag):
        while self._in and self._in.pop() != tag:
            pass

    def handle_data(self, data):
        if "title" in self._in:
            self.title += data
        if "h1" in self._in:
            self.h1 += data
        self.texts.append(data)

    @functools.cached_property
    def text(self) -> str:
        return "".join(self.texts)

    def resolve(self, reference: str) -> tuple[Path, str]:
        """A relative reference as (file, fragment); a bare fragment points into this page."""
        parts = urllib.parse.urlsplit(reference)
        assert not parts.scheme and not parts.netloc, f"{self.path.name}: {reference} leaves the site"
        target = (self.path.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else self.path
        return target, parts.fragment


def site_pages(folder: Path) -> dict[Path, Page]:
    return {path.resolve(): Page(path) for path in sorted(folder.rglob("*.html"))}


class TableReader(HTMLParser):
    def __init__(self, text: str):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


# --- reading the pictures ------------------------------------------------------------------------


def read_svg(markup: str | bytes) -> ET.Element:
    """The picture's root element, after checking it is SVG whose viewBox is its pixel size."""
    root = ET.fromstring(markup)
    assert root.tag == f"{SVG}svg"
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    return root


def svg_texts(root: ET.Element) -> list[str]:
    return ["".join(element.itertext()) for element in root.iter(f"{SVG}text")]


_PATH = re.compile(r"([MLHVhvZ])([^MLHVhvZ]*)")


def path_points(d: str) -> list[tuple[float, float]]:
    """The vertices of a path in absolute coordinates (the report draws with M, L, H, V, h, v and Z only)."""
    assert _PATH.sub("", d).strip() == "", f"unexpected path commands in {d[:80]}"
    points, x, y = [], 0.0, 0.0
    for command, argument in _PATH.findall(d):
        numbers = [float(n) for n in argument.split()]
        if command in "ML":
            x, y = numbers
        elif command == "H":
            x = numbers[0]
        elif command == "V":
            y = numbers[0]
        elif command == "h":
            x += numbers[0]
        elif command == "v":
            y += numbers[0]
        if command != "Z":
            points.append((x, y))
    return points


def shapes(root: ET.Element) -> list[ET.Element]:
    """The drawn paths and rectangles, without the white background."""
    drawn = list(root.iter(f"{SVG}path")) + list(root.iter(f"{SVG}rect"))
    return [shape for shape in drawn if shape.get("width") != "100%"]


def dots(root: ET.Element, color: str) -> list[list[tuple[float, float]]]:
    """The point markers of one color (round-capped paths of zero-length segments), per path in drawing order."""
    markers = [p.get("d") for p in root.iter(f"{SVG}path") if p.get("stroke") == color and p.get("stroke-linecap") == "round"]
    for d in markers:
        assert re.fullmatch(r"(M[-\d.]+ [-\d.]+h0)+", d), d
    return [[(float(x), float(y)) for x, y in re.findall(r"M([-\d.]+) ([-\d.]+)", d)] for d in markers]


def assert_drawn_inside(root: ET.Element) -> None:
    """Something is drawn, every vertex and rectangle inside the picture, and there is text."""
    width, height = float(root.get("width")), float(root.get("height"))
    drawn = shapes(root)
    assert drawn, "nothing drawn"
    for shape in drawn:
        if shape.tag == f"{SVG}path":
            points = path_points(shape.get("d"))
        else:
            x, y, w, h = (float(shape.get(k)) for k in ("x", "y", "width", "height"))
            assert w > 0 and h > 0
            points = [(x, y), (x + w, y + h)]
        for x, y in points:
            assert -0.5 <= x <= width + 0.5 and -0.5 <= y <= height + 0.5, f"({x}, {y}) outside {width}x{height}"
    assert any(text.strip() for text in svg_texts(root))


# --- the real data -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_report(real_warehouse: Path) -> ReportSummary:
    with store.writer_lock(real_warehouse):
        database_build.build_database(real_warehouse, settings.DEFAULT_BASELINES)
        return build_report(real_warehouse)


@pytest.fixture(scope="module")
def real_pages(real_report: ReportSummary) -> dict[Path, Page]:
    return site_pages(real_report.folder)


def column(warehouse: Path, sql: str) -> list:
    """The first column of a query's rows."""
    return [row[0] for row in db.query(warehouse, sql).rows]
