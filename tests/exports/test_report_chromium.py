"""The static report opened in headless Chromium (installed from the system's packages when missing)
through the DevTools protocol: no console error, every picture decoded, a screenshot that is not blank."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import build_warehouse, git, liger_csv, liger_row
from report_reading import TITLE, Page

from pipelines.core import settings
from pipelines.exports.report import build_report, timeline
from pipelines.statistics import database_build

pytest_plugins = ["report_reading"]
VIEWPORT = (1280, 900)


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


@contextlib.contextmanager
def devtools_page(binary: str, page: Path, profile: Path):
    """A headless Chromium with `page` loaded in a 1280 x 900 viewport: its DevTools session, closed on exit."""
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
            tools.call("Emulation.setDeviceMetricsOverride", width=VIEWPORT[0], height=VIEWPORT[1], deviceScaleFactor=1, mobile=False)
            tools.call("Page.navigate", url=page.as_uri())
            tools.wait_for("Page.loadEventFired")
            yield tools
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def evaluate(tools: DevTools, expression: str):
    result = tools.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
    assert "exceptionDetails" not in result, result["exceptionDetails"]
    return result["result"]["value"]


def open_in_chromium(binary: str, page: Path, screenshot: Path, profile: Path) -> Rendered:
    """Load a page in headless Chromium, decode every image on it, save a screenshot and count its colors."""
    with devtools_page(binary, page, profile) as tools:
        title = evaluate(tools, "document.title")
        images = evaluate(tools, DECODE_IMAGES)
        errors = list(tools.errors)  # before the probes below add anything of their own
        shot = tools.call("Page.captureScreenshot", format="png")["data"]
        screenshot.write_bytes(base64.b64decode(shot))
        stats = evaluate(tools, f"{SCREENSHOT_STATS}({json.dumps(shot)})")
        return Rendered(title, errors, images, stats)


# The page's layout as a reader first sees it (every <details> closed), then with every <details> open:
# its height, whether the page itself scrolls sideways, and its widest table against main's content width.
# Tables inside a closed <details> are not seen, so not measured. A table's box is its scroll container's
# when it has one: a wide table scrolls inside it, not the page.
LAYOUT = """(() => {
  const root = document.documentElement;
  const main = document.querySelector("main");
  const style = getComputedStyle(main);
  const content = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const measure = () => {
    const tables = Array.from(document.querySelectorAll("table")).filter((t) => t.checkVisibility());
    const boxes = tables.map((t) => (t.closest(".scroll") || t).getBoundingClientRect().width);
    return {height: root.scrollHeight, page_width: root.scrollWidth,
            widest_table: Math.max(0, ...tables.map((t) => t.getBoundingClientRect().width)),
            widest_box: Math.max(0, ...boxes), tables: tables.length};
  };
  const closed = measure();
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const open = measure();
  return {viewport: root.clientWidth, content, closed, open};
})()"""


def layout_of(binary: str, page: Path, profile: Path) -> dict:
    """`LAYOUT` of a page in the 1280 x 900 viewport."""
    with devtools_page(binary, page, profile) as tools:
        return evaluate(tools, LAYOUT)


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


def test_the_changes_page_renders_in_headless_chromium(chromium, real_report, tmp_path):
    page = real_report.folder / "changes.html"
    rendered = open_in_chromium(chromium, page, tmp_path / "changes.png", tmp_path / "profile")
    assert rendered.title.startswith("Change points") and rendered.title.endswith(TITLE)
    assert_rendered(rendered)


# A kernel of long names: its page would be tens of screens tall and its tables twice the page's width if it
# showed everything open and never wrapped a key (the real report's pages were 4,000-151,000 px, issue 31).
LONG_KERNEL = "fused_linear_grpo_loss_sequence"
LONG_CONFIG = (
    '{"activation_type":"geglu","batch_size_per_device":2,"dtype":"torch.bfloat16","hidden_act":"gelu_pytorch_tanh",'
    '"intermediate_size":14336,"num_shards":4,"sequence_length":8192}'
)
GPUS = ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA B200")
FIRST_VIEW_SCREENS = 3  # a kernel's page opens at most this many viewports tall


@pytest.fixture
def long_kernel_warehouse(upstream_repo, tmp_path) -> Path:
    """The data files: the long kernel on three GPUs, three passes, two metrics, two providers, eight sizes;
    upstream's CI: four benchmarked commits of it on the H100, six workloads (two past a chart's first four)."""
    sizes = [str(2**i) for i in range(10, 18)]
    rows = [
        liger_row(LONG_KERNEL, provider, mode, metric, unit, x_value=x, y50=y, config=LONG_CONFIG, gpu=gpu, timestamp="2025-06-01 10:00:00")
        for gpu in GPUS
        for mode in ("full", "forward", "backward")
        for metric, unit in (("speed", "ms"), ("memory", "MB"))
        for provider, y in (("liger", "0.5"), ("huggingface", "0.7"))
        for x in sizes
    ]
    upstream_repo.commit({"benchmark/data/all_benchmark_data.csv": liger_csv(*rows)}, "data")
    git(upstream_repo.path, "checkout", "--quiet", "--orphan", "gh-pages")
    git(upstream_repo.path, "rm", "-r", "-f", "--quiet", ".")
    for day, (folder, liger) in enumerate((("aaaaaaa", "0.5"), ("bbbbbbb", "0.5"), ("ccccccc", "0.8"), ("ddddddd", "0.8"))):
        ci = [
            liger_row(LONG_KERNEL, provider, x_value=x, y50=y, config=LONG_CONFIG, gpu=GPUS[1], timestamp=f"2025-05-0{day + 1} 00:10:00")
            for provider, y in (("liger", liger), ("huggingface", "0.7"))
            for x in sizes[:6]
        ]
        upstream_repo.commit({f"benchmarks/{folder}/benchmark.csv": liger_csv(*ci)}, f"ci {folder}")
    git(upstream_repo.path, "checkout", "--quiet", "main")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache", streams=("data", "ci"))
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    return warehouse


def test_a_kernel_page_opens_a_few_screens_tall_and_its_tables_fit_the_page(chromium, long_kernel_warehouse, tmp_path):
    summary = build_report(long_kernel_warehouse)
    page = summary.folder / summary.kernel_pages[LONG_KERNEL]
    layout = layout_of(chromium, page, tmp_path / "profile")
    height = VIEWPORT[1]
    closed, opened = layout["closed"], layout["open"]
    # As a reader first sees it: a few screens, though everything opened is many more (so the bound is the folding's).
    assert closed["height"] <= FIRST_VIEW_SCREENS * height
    assert opened["height"] > 4 * FIRST_VIEW_SCREENS * height
    assert opened["tables"] >= 3 * 3 * 2 + 1  # a table of numbers under each sweep chart, and the runs
    # Neither view scrolls sideways, and no table is wider than main's content (the page's width less its margins).
    for view in (closed, opened):
        assert view["page_width"] <= layout["viewport"]
        assert view["widest_table"] <= layout["content"] + 0.5
    text = page.read_text(encoding="utf-8")
    assert text.count('<details class="fold"') >= 2 * len(GPUS)  # the sweep charts per GPU, the history, tables


def main(site: Path) -> None:
    """Print the layout of the front page, each kernel page and the changes page of a built report (the figures of docs/exports.md):
    `PYTHONPATH=tests python tests/exports/test_report_chromium.py $(dirname $(python -m pipelines report))`."""
    import tempfile

    binary = _find_chromium()
    assert binary, "no chromium on PATH"
    print("page\tfirst view px\tall open px\twidest table px (all open)\tcontent px\tpage scrolls sideways")
    for page in [site / "index.html", *sorted((site / "kernels").glob("*.html")), site / "changes.html"]:
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
            layout = layout_of(binary, page, Path(profile))
        closed, opened = layout["closed"], layout["open"]
        sideways = max(closed["page_width"], opened["page_width"]) > layout["viewport"]
        print(f"{page.name}\t{closed['height']}\t{opened['height']}\t{opened['widest_table']:.0f}\t{layout['content']:.0f}\t{sideways}")


if __name__ == "__main__":
    import sys

    main(Path(sys.argv[1]))
