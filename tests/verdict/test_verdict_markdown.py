"""Nothing a contender writes reaches the pull request comment unescaped (issue 28): hostile kernel names, a GPU
name with carriage returns and a hostile file name, rendered by a real CommonMark renderer (markdown-it-py, with
GitHub's tables): the HTML holds no link, image, mention, heading or HTML element that the verdict did not write,
and no format passes a control character (a carriage return, an ANSI escape) to a terminal or a program."""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from pipelines.__main__ import main
from pipelines.core.schemas import LIGER_COLUMNS
from pipelines.verdict.render import clean, code, code_block

HEADER = list(LIGER_COLUMNS)
GPU = "NVIDIA H200\r\n\r\n[click](https://evil.example/x) ![img](https://evil.example/i.png) @everyone <b>bold</b>"
KERNELS = (
    "</details>\n# SAME: no kernel is slower",
    "[click](https://evil.example)",
    "![img](https://evil.example/a.png)",
    "@everyone",
    "<script>alert(1)</script>",
    "x\r### SAME: no kernel is slower",
    "cell\r| SAME | no kernel is slower |",
    "\x1b[31mred\x1b[0m``` `tick`",
    "https://evil.example/bare",
)
FILE = "evil\r\n@everyone [x](https:__evil.example) <img src=x>.csv"
# What the verdict itself writes.
ALLOWED_TAGS = {"h3", "h4", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "pre", "details", "summary"}


def hostile_csv(path: Path, factor: float) -> Path:
    """Every hostile kernel on the hostile GPU, liger and torch, four sizes; liger's times times `factor`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(HEADER)
    for kernel in KERNELS:
        for provider in ("liger", "torch"):
            for size in (1024, 2048, 4096, 8192):
                ms = size / 1000 * (factor if provider == "liger" else 1.0)
                writer.writerow(
                    [
                        kernel,
                        provider,
                        "forward",
                        "speed",
                        "ms",
                        "BT",
                        "tokens",
                        size,
                        ms,
                        ms * 0.999,
                        ms * 1.001,
                        '{"a": 1}',
                        GPU,
                        "2026-12-01 10:00:00",
                        "0.8.2",
                    ]
                )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buffer.getvalue())
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return hostile_csv(tmp_path / "branch" / FILE, 2.0), hostile_csv(tmp_path / "main" / "benchmark.csv", 1.0)


def verdict(capsys, files: tuple[Path, Path], fmt: str) -> tuple[int, str]:
    contender, base = files
    code_ = main(["verdict", str(contender), "--baseline", str(base), "--format", fmt, "--warehouse-dir", "/nonexistent/warehouse"])
    return code_, capsys.readouterr().out


class Reading(HTMLParser):
    """The tags of rendered HTML, and its text outside <code> and <pre> (where GitHub links and mentions)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.open: list[str] = []
        self.prose: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        self.tags.append(tag)
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag)]

    def handle_data(self, data: str) -> None:
        if not {"code", "pre"} & set(self.open):
            self.prose.append(data)


def rendered(markdown: str) -> Reading:
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    reading = Reading()
    reading.feed(html)
    return reading


def test_the_comment_renders_nothing_the_verdict_did_not_write(capsys, files: tuple[Path, Path]) -> None:
    code_, markdown = verdict(capsys, files, "markdown")
    assert code_ == 1
    reading = rendered(markdown)
    assert set(reading.tags) <= ALLOWED_TAGS, set(reading.tags) - ALLOWED_TAGS
    assert "a" not in reading.tags and "img" not in reading.tags and "script" not in reading.tags
    prose = " ".join(reading.prose)
    assert "@" not in prose  # no mention outside code
    assert "://" not in prose and "evil" not in prose  # no bare link GitHub would make one of
    assert "SAME: no kernel" not in prose and "bold" not in prose
    # One heading of the verdict's, one per GPU and backend; every fold closed by the verdict itself.
    assert reading.tags.count("h3") == 1 and reading.tags.count("h4") == 1
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    assert html.count("<details>") == html.count("</details>") == reading.tags.count("details") == markdown.count("<details>") > 0
    assert markdown.startswith("### Benchmark verdict: SLOWER (exit 1)")
    assert "\r" not in markdown and "\x1b" not in markdown
    # The hostile kernels are there, as text in code spans.
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 1 and "<script>" not in html


def test_text_and_json_carry_no_control_characters(capsys, files: tuple[Path, Path]) -> None:
    code_, text = verdict(capsys, files, "text")
    assert code_ == 1
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)  # line feeds only
    assert text.startswith("SLOWER (exit 1)")
    code_, out = verdict(capsys, files, "json")
    document = json.loads(out)

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)

    found = list(strings(document))
    assert any("@everyone" in s for s in found)  # the data is there, as data
    assert not [s for s in found if re.search(r"[\x00-\x1f\x7f-\x9f]", s)]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "`plain`"),
        ("a`b", "``a`b``"),
        ("``x``", "``` ``x`` ```"),
        ("`", "`` ` ``"),
        ("a\r\nb\x1b[31m", "`a b[31m`"),
        ("", ""),
    ],
)
def test_code_spans_hold_any_backticks(value: str, expected: str) -> None:
    assert code(value) == expected
    if expected:
        html = MarkdownIt("commonmark").render(expected)
        assert html.startswith("<p><code>") and "</code></p>" in html


def test_a_code_block_outlasts_its_fences() -> None:
    block = code_block(["```", "````\r@everyone"])
    html = MarkdownIt("commonmark").render(block + "\n\nafter")
    assert html.count("<pre>") == 1 and "<p>after</p>" in html
    assert clean("a\rb\x1b[0m\u202e") == "a b[0m"
