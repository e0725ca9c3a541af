"""The static report: rendered from the real data and checked page by page, link by link, picture by
picture; opened in headless Chromium; and its build, CLI and asset on a small repository."""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import dagster as dg
import pytest
from conftest import build_warehouse, liger_csv, liger_row

from pipelines.__main__ import main
from pipelines.core import settings
from pipelines.defs.exports.report import report as report_asset
from pipelines.defs.resources import Warehouse
from pipelines.duck import database_build, db
from pipelines.exports.report import (
    build,
    build_report,
    heatmaps,
    html,
    is_stale,
    pages,
    report_dir,
    sweeps,
    timeline,
)
from pipelines.exports.report.site import ReportSummary
from pipelines.storage import store

DATA = "benchmark/data/all_benchmark_data.csv"
TITLE = "Liger benchmark report"
SVG = "{http://www.w3.org/2000/svg}"


# --- reading the site --------------------------------------------------------------------------


class Page(HTMLParser):
    """What a page holds: its title, element ids, the links and sources it refers to, its text."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path
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


def test_every_kernel_has_a_page(real_report, real_pages, real_warehouse):
    kernels = column(real_warehouse, "SELECT DISTINCT kernel FROM runs ORDER BY 1")
    assert len(kernels) == 38
    assert sorted(real_report.kernel_pages) == kernels
    for kernel, relative in real_report.kernel_pages.items():
        page = real_pages[(real_report.folder / relative).resolve()]
        assert kernel in page.h1
        assert page.title.endswith(TITLE)
    index = real_pages[real_report.index.resolve()]
    linked = {index.resolve(href)[0] for href in index.links}
    assert {(real_report.folder / p).resolve() for p in real_report.kernel_pages.values()} <= linked


def test_the_overview_names_every_gpu_with_its_scorecard(real_report, real_pages, real_warehouse):
    gpus = column(real_warehouse, "SELECT DISTINCT gpu_name FROM runs ORDER BY 1")
    assert len(gpus) == 8
    index = real_pages[real_report.index.resolve()]
    assert index.title == TITLE
    for gpu in gpus:
        assert gpu in index.text
        assert pages.gpu_anchor(gpu) in index.ids
    scorecard_images = [image for image in index.images if "/scorecard/" in image["src"]]
    pairs = column(real_warehouse, "SELECT count(*) FROM (SELECT DISTINCT gpu_name, metric FROM kernel_scorecard)")
    assert len(scorecard_images) == pairs[0]


def test_overview_wins_and_losses_add_up_to_the_scorecard(real_report, real_warehouse):
    sql = "SELECT sum(wins), sum(losses), sum(draws) FROM kernel_scorecard"
    expected = db.query(real_warehouse, sql).rows[0]
    text = real_report.index.read_text(encoding="utf-8")
    tables = TableReader(text).tables
    totals = [t for t in tables if t[0][:3] == ["provider", "baseline", "rows"]]
    assert totals
    sums = [sum(int(row[i]) for t in totals for row in t[1:]) for i in (4, 5, 6)]
    assert tuple(sums) == tuple(expected)


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


def test_every_picture_is_an_svg_with_drawn_axes_and_labels(real_report, real_pages, real_warehouse):
    seen = set()
    for page in real_pages.values():
        for image in page.images:
            path, _ = page.resolve(image["src"])
            assert path.is_file(), f"{page.path.name}: missing {image['src']}"
            assert path.suffix == ".svg"
            root = read_svg(path.read_bytes())
            assert (root.get("width"), root.get("height")) == (image["width"], image["height"])
            assert_drawn_inside(root)
            assert image["alt"]
            seen.add(path)
    # One chart per kernel, GPU, pass and metric that has a passed run, each shown on its kernel's page.
    [charts_expected] = column(
        real_warehouse, "SELECT count(*) FROM (SELECT DISTINCT kernel, gpu_name, pass, metric FROM provider_comparisons)"
    )
    kernel_charts = [p for p in seen if p.parent.parent.name == "kernels"]
    assert len(kernel_charts) == charts_expected
    for chart in kernel_charts:
        texts = svg_texts(read_svg(chart.read_bytes()))
        assert "ratio to baseline" in texts
        assert any(re.fullmatch(r"(latency|peak memory) \(\w+\)", text) for text in texts)
    assert seen == {p.resolve() for p in real_report.folder.rglob("*.svg")}
    assert real_report.images == len(seen)
    assert not list(real_report.folder.rglob("*.png"))


def test_a_sweep_chart_shows_its_providers_x_values_and_unit(real_report, real_warehouse):
    kernel, gpu = "fused_add_rms_norm", "NVIDIA B200"
    rows = db.query(
        real_warehouse,
        f"""SELECT DISTINCT pc.provider, runs.x_value FROM provider_comparisons AS pc JOIN runs USING (run_id)
            WHERE pc.kernel = '{kernel}' AND pc.gpu_name = '{gpu}' AND pc.pass = 'full' AND pc.metric = 'speed'""",
    ).rows
    assert rows
    chart = real_report.folder / "img" / "kernels" / kernel / "nvidia-b200-full-speed.svg"
    root = read_svg(chart.read_bytes())
    texts = svg_texts(root)
    assert {provider for provider, _ in rows} <= set(texts)
    assert {x for _, x in rows} <= set(texts)
    assert "latency (ms)" in texts
    # The y tick labels are numbers, and there are at least two per panel.
    assert sum(bool(re.fullmatch(r"\d+(\.\d+)?", text)) for text in texts) >= len({x for _, x in rows}) + 4


def test_the_overview_picture_has_a_cell_per_gpu_and_provider(real_report, real_warehouse):
    root = read_svg(real_report.overview_image.read_bytes())
    texts = svg_texts(root)
    cells = db.query(
        real_warehouse,
        "SELECT metric, count(*) FROM (SELECT DISTINCT metric, gpu_name, provider FROM kernel_scorecard "
        "WHERE geomean_ratio > 0) GROUP BY metric",
    ).rows
    for gpu in column(real_warehouse, "SELECT DISTINCT gpu_name FROM kernel_scorecard"):
        assert gpu in texts
    for provider in column(real_warehouse, "SELECT DISTINCT provider FROM kernel_scorecard WHERE geomean_ratio > 0"):
        assert provider in texts
    fills = [r.get("fill") for r in shapes(root) if r.tag == f"{SVG}rect"]
    colored = [fill for fill in fills if re.fullmatch("#[0-9a-f]{6}", fill) and fill != heatmaps.NO_DATA]
    assert len(colored) == sum(n for _, n in cells)
    assert {"0.25x", "1x", "4x", "latency", "peak memory"} <= set(texts)


def test_every_link_resolves(real_pages, real_report):
    checked = 0
    for page in real_pages.values():
        for reference in page.links + page.sources + [image["src"] for image in page.images]:
            target, fragment = page.resolve(reference)
            assert target.is_file(), f"{page.path.name}: {reference} does not exist"
            assert real_report.folder.resolve() in target.parents
            if fragment:
                assert fragment in real_pages[target].ids, f"{page.path.name}: no #{fragment} in {target.name}"
            checked += 1
    assert checked > 5000


def test_every_number_carries_its_run_snapshot_and_commit(real_report, real_pages, real_warehouse):
    runs = db.query(
        real_warehouse,
        """SELECT runs.kernel, runs.run_id, runs.first_seen_snapshot, snapshots."commit"
           FROM runs JOIN snapshots ON snapshots.snapshot_id = runs.first_seen_snapshot""",
    ).rows
    assert len(runs) == 4421
    for kernel, run_id, snapshot, commit in runs:
        page = real_pages[(real_report.folder / real_report.kernel_pages[kernel]).resolve()]
        assert html.anchor_id("run", run_id) in page.ids
        assert run_id in page.text and snapshot in page.text and commit[:12] in page.text
    # Each charted point links to its run.
    point = db.query(real_warehouse, "SELECT kernel, run_id FROM provider_comparisons LIMIT 1").rows[0]
    page = real_pages[(real_report.folder / real_report.kernel_pages[point[0]]).resolve()]
    assert f"#{html.anchor_id('run', point[1])}" in page.links


def test_the_changes_page_lists_regressions_and_improvements_newest_first(real_report, real_pages, real_warehouse):
    expected = db.query(real_warehouse, "SELECT count(*) FROM version_changes WHERE verdict IN ('regressed', 'improved', 'changed')").rows[
        0
    ][0]
    path = (real_report.folder / "changes.html").resolve()
    [table] = TableReader(path.read_text(encoding="utf-8")).tables
    header, rows = table[0], table[1:]
    assert len(rows) == expected > 0
    observed = [row[header.index("observed at")] for row in rows]
    assert observed == sorted(observed, reverse=True)
    assert {row[header.index("verdict")] for row in rows} <= {"regressed", "improved", "changed"}
    run_links = [href for href in real_pages[path].links if "#run-" in href]
    assert len(run_links) == 2 * expected


def test_the_report_is_fresh_until_the_database_or_its_code_changes(real_report, real_warehouse, monkeypatch):
    assert not is_stale(real_warehouse)
    with monkeypatch.context() as patched:
        patched.setattr(build, "_code_fingerprint", lambda: "other code")
        assert is_stale(real_warehouse)
    assert not is_stale(real_warehouse)
    database = db.database_path(real_warehouse)
    stat = database.stat()
    os.utime(database, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    try:
        assert is_stale(real_warehouse)
    finally:
        os.utime(database, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not is_stale(real_warehouse)


# --- headless Chromium ---------------------------------------------------------------------------


def _install_chromium() -> str:
    """Install Debian's chromium; the reason it failed, if it did."""
    if shutil.which("apt-get") is None:
        return "there is no apt-get here to install it with"
    if os.geteuid() == 0:
        prefix = ["env", "DEBIAN_FRONTEND=noninteractive"]
    elif shutil.which("sudo"):
        prefix = ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
    else:
        return "installing it needs root, and there is no sudo"
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        try:
            subprocess.run(prefix + command, check=True, capture_output=True, text=True, timeout=900)
        except subprocess.CalledProcessError as exc:
            return f"`{' '.join(command)}` failed: {(exc.stderr or '').strip()[-300:]}"
        except (subprocess.TimeoutExpired, OSError) as exc:
            return f"`{' '.join(command)}` failed: {exc}"
    return "apt-get installed chromium, yet there is no chromium binary on PATH"


def _find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> str:
    """The chromium binary, installed from the system's packages when missing (once per session)."""
    binary = _find_chromium()
    if binary:
        return binary
    reason = _install_chromium()
    binary = _find_chromium()
    if binary:
        return binary
    message = f"headless Chromium is not available: {reason}"
    if os.environ.get("CI") == "true" or os.environ.get("REQUIRE_REAL_DATA") == "1":
        pytest.fail(message)
    pytest.skip(message)


class DevTools:
    """A minimal Chrome DevTools Protocol session on one page: commands, and the errors it reports."""

    def __init__(self, socket):
        self.socket = socket
        self.next_id = 0
        self.errors: list[str] = []

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = self._receive()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_for(self, event: str) -> None:
        while self._receive().get("method") != event:
            pass

    def _receive(self) -> dict:
        message = json.loads(self.socket.recv(timeout=60))
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            self.errors.append(" ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(f"{params['entry']['text']} {params['entry'].get('url', '')}")
        return message


# Every <img> loaded now (lazy ones too) and decoded: an SVG Chromium cannot parse fails here,
# where it would only show as an empty box on the page.
DECODE_IMAGES = """Promise.all(Array.from(document.images, (img) => {
  img.loading = "eager";
  return img.decode().then(() => ({src: img.getAttribute("src"), width: img.naturalWidth}),
                           (error) => ({src: img.getAttribute("src"), width: 0, error: String(error)}));
}))"""
# The screenshot's pixels, read back through a canvas by the same browser: how many colors, how much white.
SCREENSHOT_STATS = """(async (png) => {
  const image = new Image();
  image.src = "data:image/png;base64," + png;
  await image.decode();
  const canvas = document.createElement("canvas");
  canvas.width = image.naturalWidth;
  canvas.height = image.naturalHeight;
  const context = canvas.getContext("2d");
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
  const colors = new Set();
  let white = 0;
  for (let i = 0; i < data.length; i += 4) {
    const rgb = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    colors.add(rgb);
    white += rgb === 0xffffff;
  }
  return {width: canvas.width, height: canvas.height, colors: colors.size, white};
})"""


@dataclass(frozen=True)
class Rendered:
    title: str
    errors: list[str]  # console errors, uncaught exceptions, failed loads
    images: list[dict]  # per <img>: its src and natural width once decoded (0 when it could not be)
    screenshot: dict  # width, height, colors, white: the screenshot's pixels


def open_in_chromium(binary: str, page: Path, screenshot: Path, profile: Path) -> Rendered:
    """Load a page in headless Chromium, decode every image on it, save a screenshot and count its colors."""
    from websockets.sync.client import connect

    process = subprocess.Popen(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "--window-size=1280,900",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            assert process.poll() is None, f"chromium exited with {process.returncode}"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as response:
            targets = json.load(response)
        target = next(t for t in targets if t["type"] == "page")
        with connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=30) as socket:
            tools = DevTools(socket)
            for domain in ("Runtime", "Log", "Page"):
                tools.call(f"{domain}.enable")
            # The window's size includes a (headless) frame; the page's own viewport is set exactly.
            tools.call("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False)
            tools.call("Page.navigate", url=page.as_uri())
            tools.wait_for("Page.loadEventFired")

            def evaluate(expression: str):
                result = tools.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
                assert "exceptionDetails" not in result, result["exceptionDetails"]
                return result["result"]["value"]

            title = evaluate("document.title")
            images = evaluate(DECODE_IMAGES)
            errors = list(tools.errors)  # before the probes below add anything of their own
            shot = tools.call("Page.captureScreenshot", format="png")["data"]
            screenshot.write_bytes(base64.b64decode(shot))
            stats = evaluate(f"{SCREENSHOT_STATS}({json.dumps(shot)})")
            return Rendered(title, errors, images, stats)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def assert_rendered(rendered: Rendered) -> None:
    """No error, every picture decoded, and a screenshot that is neither one color nor nearly all white."""
    assert rendered.errors == []
    assert rendered.images
    assert [image for image in rendered.images if not image["width"]] == []
    stats = rendered.screenshot
    assert (stats["width"], stats["height"]) == (1280, 900)
    assert stats["colors"] > 50, "the screenshot is nearly a single color"
    assert stats["white"] < 0.95 * 1280 * 900, "the screenshot is nearly all white"


def test_devtools_reports_console_errors_exceptions_and_missing_files(chromium, tmp_path):
    (tmp_path / "drawn.svg").write_text(timeline.changes_timeline([], [], []).markup)
    (tmp_path / "broken.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>')
    broken = tmp_path / "broken.html"
    broken.write_text(
        "<!DOCTYPE html><html><head><title>broken</title></head><body><p>text</p>"
        '<img src="missing.png" alt="missing"><img src="broken.svg" alt="bad svg"><img src="drawn.svg" alt="good">'
        '<script>console.error("deliberate console error"); notDefinedAnywhere();</script></body></html>'
    )
    rendered = open_in_chromium(chromium, broken, tmp_path / "broken.png", tmp_path / "profile")
    assert rendered.title == "broken"
    joined = "\n".join(rendered.errors)
    assert "deliberate console error" in joined
    assert "notDefinedAnywhere" in joined
    assert "ERR_FILE_NOT_FOUND" in joined
    widths = {image["src"]: image["width"] for image in rendered.images}
    assert widths == {"missing.png": 0, "broken.svg": 0, "drawn.svg": 810}
    assert rendered.screenshot["white"] > 0.95 * 1280 * 900  # a page of almost nothing is seen as blank


def test_the_overview_renders_in_headless_chromium(chromium, real_report, tmp_path):
    rendered = open_in_chromium(chromium, real_report.index, tmp_path / "index.png", tmp_path / "profile")
    assert rendered.title == TITLE
    assert_rendered(rendered)
    assert len(rendered.images) == len(Page(real_report.index).images)


def test_a_kernel_page_renders_in_headless_chromium(chromium, real_report, tmp_path):
    page = real_report.folder / real_report.kernel_pages["fused_add_rms_norm"]
    rendered = open_in_chromium(chromium, page, tmp_path / "kernel.png", tmp_path / "profile")
    assert rendered.title.startswith("Fused add") and rendered.title.endswith(TITLE)
    assert_rendered(rendered)
    assert len(rendered.images) == len(Page(page).images) > 5


# --- a small repository --------------------------------------------------------------------------


def small_rows(timestamp: str, liger_ms: dict[int, str]) -> list[str]:
    """liger against huggingface along a sweep of H, speed and memory; a model-config sweep; a failed kernel."""
    rows = []
    for h, liger in liger_ms.items():
        for provider, y in (("liger", liger), ("huggingface", "0.9")):
            for metric, unit in (("speed", "ms"), ("memory", "MB")):
                rows.append(
                    liger_row(
                        provider=provider,
                        metric=metric,
                        unit=unit,
                        x_value=str(h),
                        y50=y,
                        y20=str(float(y) * 0.99),
                        y80=str(float(y) * 1.01),
                        timestamp=timestamp,
                    )
                )
    for model in ("llama_3_8b", "qwen2.5_7b"):
        for provider, y in (("liger", "1.0"), ("torch", "2.0")):
            rows.append(
                liger_row(
                    kernel="cross_entropy",
                    provider=provider,
                    x_name="model_config",
                    x_label="model",
                    x_value=model,
                    y50=y,
                    y20=y,
                    y80=y,
                    config='{"B": 1}',
                    timestamp=timestamp,
                )
            )
    rows.append(liger_row(kernel="geglu", y50="", y20="", y80="", timestamp=timestamp))
    return rows


@pytest.fixture
def small_warehouse(upstream_repo, tmp_path) -> Path:
    first = small_rows("2025-01-01 10:00:00", {1024: "0.5", 2048: "0.6", 4096: "0.7"})
    upstream_repo.commit({DATA: liger_csv(*first)}, "one")
    # A newer run of every key: liger slower at 1024 (a regression), faster at 4096 (an improvement).
    second = small_rows("2025-02-01 10:00:00", {1024: "0.8", 2048: "0.6", 4096: "0.4"})
    upstream_repo.commit({DATA: liger_csv(*second)}, "two")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    return warehouse


def test_small_report_pages_charts_and_changes(small_warehouse):
    summary = build_report(small_warehouse)
    assert sorted(summary.kernel_pages) == ["cross_entropy", "geglu", "rms_norm"]
    assert summary.pages == 3 + 2
    site = site_pages(summary.folder)
    geglu = site[(summary.folder / summary.kernel_pages["geglu"]).resolve()]
    assert "No passed run on this GPU" in geglu.text and not geglu.images
    rms = site[(summary.folder / summary.kernel_pages["rms_norm"]).resolve()]
    assert len(rms.images) == 2  # forward latency and forward peak memory on the one GPU
    changes = (summary.folder / "changes.html").read_text()
    [table] = TableReader(changes).tables
    verdicts = sorted(row[1] for row in table[1:])
    # 1024 and 4096, speed and memory: two regressions and two improvements.
    assert verdicts == ["improved", "improved", "regressed", "regressed"]
    for page in site.values():
        for reference in page.links + page.sources + [image["src"] for image in page.images]:
            target, fragment = page.resolve(reference)
            assert target.is_file() and (not fragment or fragment in site[target].ids)


def test_string_x_values_keep_their_order_and_numbers_sort():
    positions, log_x = sweeps._x_axis(["llama_3_8b", "qwen2.5_7b", "llama_3_8b"])
    assert positions == {"llama_3_8b": 0.0, "qwen2.5_7b": 1.0} and not log_x
    positions, log_x = sweeps._x_axis(["4096", "1024", "65536"])
    assert list(positions) == ["1024", "4096", "65536"] and log_x
    assert not sweeps._x_axis(["1", "2", "4"])[1]


def test_a_sweep_chart_draws_each_point_where_its_value_is():
    xs = ["1024", "4096", "65536"]
    sweep = sweeps.Sweep(
        "hidden · batch=8",
        "hidden",
        [
            sweeps.Series("liger", xs, [1.0, 4.0, 100.0], [0.9, 3.8, 95.0], [1.1, 4.2, 105.0], [2.0, 2.0, 1.5]),
            sweeps.Series("torch", xs, [2.0, 8.0, 150.0], [None, None, None], [None, None, None], [1.0, 1.0, 1.0]),
        ],
    )
    colors = {"liger": "#1f77b4", "torch": "#ff7f0e"}
    root = read_svg(sweeps.sweep_figure([sweep], "ms", "latency", colors).markup)
    assert_drawn_inside(root)
    texts = svg_texts(root)
    assert {"hidden · batch=8", "hidden", "latency (ms)", "ratio to baseline", "liger", "torch", *xs} <= set(texts)
    # 1 to 150 is wide: a log axis with 1-2-5 ticks.
    assert {"1", "2", "5", "10", "20", "50", "100"} <= set(texts)
    liger_values, liger_ratios, _legend = dots(root, colors["liger"])
    torch_values, torch_ratios, _legend = dots(root, colors["torch"])
    # Higher values sit higher (smaller y); x is log2: 1024 -> 4096 is half as far as 4096 -> 65536.
    assert all(t[1] < v[1] for t, v in zip(torch_values, liger_values, strict=True))
    assert [y for _, y in liger_values] == sorted((y for _, y in liger_values), reverse=True)
    (x1, _), (x2, _), (x3, _) = liger_values
    assert (x3 - x2) == pytest.approx(2 * (x2 - x1), abs=0.2)
    # Log scale: each tenfold step is the same height (the value panel's ticks come before the ratio panel's).
    heights: dict[str, float] = {}
    for text in root.iter(f"{SVG}text"):
        heights.setdefault(text.text, float(text.get("y")))
    assert heights["1"] - heights["10"] == pytest.approx(heights["10"] - heights["100"], abs=0.2)
    # The ratio panel: liger's 2x above torch's 1x, which lies on the dashed baseline.
    assert all(li[1] < to[1] for li, to in zip(liger_ratios, torch_ratios, strict=True))
    [baseline] = [path_points(p.get("d")) for p in root.iter(f"{SVG}path") if p.get("stroke-dasharray")]
    assert {y for _, y in torch_ratios} == {baseline[0][1]}
    # The p20-p80 band: a closed, translucent shape in liger's color; none for torch, which has no band.
    bands = [p for p in root.iter(f"{SVG}path") if p.get("fill-opacity")]
    assert [band.get("fill") for band in bands] == [colors["liger"]] and bands[0].get("d").endswith("Z")


def test_a_narrow_sweep_gets_a_linear_axis_and_named_categories_their_order():
    sweep = sweeps.Sweep(
        "model",
        "model",
        [
            sweeps.Series("liger", ["llama_3_8b", "qwen2.5_7b"], [1.0, 1.5], [None, None], [None, None], [2.0, 1.0]),
        ],
    )
    root = read_svg(sweeps.sweep_figure([sweep], "ms", "latency", {"liger": "#1f77b4"}).markup)
    texts = svg_texts(root)
    labels = [float(t) for t in texts if re.fullmatch(r"\d+(\.\d+)?", t)]
    assert 1.0 in labels and 1.5 in labels and 100 not in labels
    [values, _ratios, _legend] = dots(root, "#1f77b4")
    assert values[0][0] < values[1][0]  # llama first, as given
    assert texts.index("llama_3_8b") < texts.index("qwen2.5_7b")


def test_names_from_the_data_are_escaped_in_every_picture():
    odd = 'a<b>&"c" \x01\u2603'
    shown = 'a<b>&"c" \ufffd\u2603'
    sweep = sweeps.Sweep(odd, odd, [sweeps.Series(odd, ["1", "2"], [1.0, 2.0], [None, 1.9], [None, 2.1], [None, 1.0])])
    cell = heatmaps.HeatCell(odd, odd, 1.5, 3, 1)
    drawings = [
        sweeps.sweep_figure([sweep], odd, odd, {odd: "#1f77b4"}),
        heatmaps.scorecard_heatmap([cell], odd),
        heatmaps.summary_heatmap({odd: [cell]}, odd),
    ]
    for drawing in drawings:
        root = read_svg(drawing.markup)
        assert shown in svg_texts(root)
        assert_drawn_inside(root)


def test_heat_maps_color_each_cell_by_its_ratio():
    cells = [
        heatmaps.HeatCell("rms_norm · full vs torch", "liger", 4.0, 5, 0),
        heatmaps.HeatCell("rms_norm · full vs torch", "liger_triton", 0.25, 0, 5),
        heatmaps.HeatCell("softmax · full vs torch", "liger", 1.0, 1, 1),
    ]
    root = read_svg(heatmaps.scorecard_heatmap(cells, "title").markup)
    texts = svg_texts(root)
    assert {"4.00  5/0", "0.25  0/5", "1.00  1/1", "liger", "liger_triton", "softmax · full vs torch"} <= set(texts)
    fills = [r.get("fill") for r in shapes(root) if r.tag == f"{SVG}rect"]
    # The grey of no data, one cell each, and the color bar; saturated blue for 4x, red for 1/4, white-ish for 1.
    assert fills[0] == heatmaps.NO_DATA and fills[1:4] == [heatmaps.RDBU[-1], heatmaps.RDBU[0], heatmaps.RDBU[5]]
    assert fills[4] == "url(#ratio-ramp)" and root.find(f".//{SVG}linearGradient").get("id") == "ratio-ramp"


def test_the_changes_timeline_marks_each_change_by_its_verdict():
    times = [dt.datetime(2025, 1, 5, tzinfo=dt.UTC), dt.datetime(2025, 6, 1, tzinfo=dt.UTC), dt.datetime(2025, 3, 1, tzinfo=dt.UTC)]
    root = read_svg(timeline.changes_timeline(times, [2.0, 0.5, 1.5], ["improved", "regressed", "improved"]).markup)
    texts = svg_texts(root)
    assert {"improved (2)", "regressed (1)", "2025-02", "2025-04", "2025-06", "1x", "2x", "0.5x"} <= set(texts)
    improved, _legend = dots(root, timeline.IMPROVED)
    regressed, _legend = dots(root, timeline.REGRESSED)
    assert len(improved) == 2 and len(regressed) == 1
    (jan, two), (mar, one_and_half) = improved
    assert jan < mar < regressed[0][0]  # in time order left to right
    assert two < one_and_half < regressed[0][1]  # 2x highest, 0.5x lowest
    empty = read_svg(timeline.changes_timeline([], [], []).markup)
    assert "no regression or improvement" in svg_texts(empty)


def test_a_failed_build_keeps_the_old_report_and_leaves_nothing_behind(small_warehouse, monkeypatch):
    first = build_report(small_warehouse)
    before = first.index.read_text()

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(pages, "changes_page", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        build_report(small_warehouse)
    assert first.index.read_text() == before
    assert [p.name for p in small_warehouse.iterdir() if store.TMP_MARK in p.name] == []
    monkeypatch.undo()
    build_report(small_warehouse)
    assert first.index.read_text().count("<h2") == before.count("<h2")
    assert [p.name for p in small_warehouse.iterdir() if store.TMP_MARK in p.name] == []


def test_report_command_builds_when_needed_and_prints_the_path(small_warehouse, monkeypatch, capsys):
    monkeypatch.setenv("WAREHOUSE_DIR", str(small_warehouse))
    opened = []

    class Browser:
        def open(self, url):
            opened.append(url)
            return True

    monkeypatch.setattr("webbrowser.get", lambda *args: Browser())
    index = report_dir(small_warehouse) / "index.html"
    assert main(["report", "--open"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(index) and "built" in err
    assert opened == [index.as_uri()]
    stamp = (report_dir(small_warehouse) / "build.json").read_text()

    assert main(["report"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(index) and "built" not in err
    assert (report_dir(small_warehouse) / "build.json").read_text() == stamp

    database_build.build_database(small_warehouse, settings.DEFAULT_BASELINES)  # newer statistics
    assert main(["report"]) == 0
    assert "built" in capsys.readouterr().err


def test_report_command_without_a_database_says_what_to_do(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WAREHOUSE_DIR", str(tmp_path / "empty"))
    assert main(["report"]) == 1
    assert "materialize" in capsys.readouterr().err


def test_report_asset_shows_the_overview_and_the_site(small_warehouse, tmp_path):
    resource = Warehouse(
        warehouse_dir=str(small_warehouse),
        source="unused",
        branch="main",
        file_glob=settings.DEFAULT_FILE_GLOB,
        cache_dir=str(tmp_path / "cache"),
        baselines=list(settings.DEFAULT_BASELINES),
    )
    result = dg.materialize([report_asset], resources={"warehouse": resource}, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    [event] = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    markdown = metadata["overview"].value
    encoded = markdown.split("data:image/svg+xml;base64,", 1)[1].rstrip(")")
    overview = read_svg(base64.b64decode(encoded))
    assert {"liger", "NVIDIA A100-SXM4-80GB", "latency"} <= set(svg_texts(overview))
    index = Path(metadata["index"].value)
    assert index == report_dir(small_warehouse) / "index.html" and index.is_file()
    assert metadata["url"].value == index.as_uri()
    assert metadata["kernel_pages"].value == 3 and metadata["pages"].value == 5
    assert metadata["rebuilt"].value is True
    stamp = (report_dir(small_warehouse) / "build.json").read_text()

    again = dg.materialize([report_asset], resources={"warehouse": resource}, instance=dg.DagsterInstance.ephemeral())
    [event] = again.get_asset_materialization_events()
    assert event.materialization.metadata["rebuilt"].value is False
    assert event.materialization.metadata["pages"].value == 5
    assert (report_dir(small_warehouse) / "build.json").read_text() == stamp


def test_a_warehouse_of_failed_runs_still_makes_a_report(upstream_repo, tmp_path):
    failed = [liger_row(y50="", y20="", y80=""), liger_row(provider="huggingface", y50="")]
    upstream_repo.commit({DATA: liger_csv(*failed)}, "failed")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    summary = build_report(warehouse)
    site = site_pages(summary.folder)
    index = site[summary.index.resolve()]
    assert "No provider has a baseline to compare with on this GPU" in index.text
    assert "NVIDIA A100-SXM4-80GB" in index.text
    for page in site.values():
        for image in page.images:
            assert page.resolve(image["src"])[0].is_file()
