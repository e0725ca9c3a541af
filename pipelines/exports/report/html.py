"""Small HTML building blocks for the report: every value from the data passes `text` (escaped).

Functions return HTML strings; a string handed to `table` or `page` as HTML
must already be built by these helpers.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import math
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from pipelines.core import display

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1b1b1b; background: #fff; }
nav { background: #20324a; padding: 0.6em 1.2em; }
nav a { color: #fff; margin-right: 1.2em; text-decoration: none; font-weight: 600; }
main { padding: 0.5em 1.5em 2em; max-width: 1500px; }
footer { padding: 1em 1.5em; color: #555; font-size: 0.85em; border-top: 1px solid #ddd; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; } h3 { margin-top: 1.2em; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
table { border-collapse: collapse; font-size: 0.82em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.improved td:first-child, tr.improved td:nth-child(2) { color: #2166ac; font-weight: 600; }
tr.regressed td:first-child, tr.regressed td:nth-child(2) { color: #b2182b; font-weight: 600; }
tr.stale td:last-child, strong.stale { color: #b2182b; }
.note { background: #fff3cd; border-left: 4px solid #e0a800; padding: 0.4em 0.8em; }
tr.failed { color: #888; }
tr:has(:target) td, figure:target { background: #fff3b0; }
code { font-size: 0.92em; }
details { margin: 0.3em 0 1em; } summary { cursor: pointer; color: #20324a; }
details.fold { margin: 0.25em 0; border: 1px solid #dde3ea; border-radius: 3px; }
details.fold > summary { background: #f3f5f8; padding: 0.3em 0.6em; }
details.fold[open] > summary { border-bottom: 1px solid #dde3ea; }
details.fold > .folded { padding: 0.2em 0.6em 0.4em; }
summary > h2, summary > h3 { display: inline; font-size: 1.05em; margin: 0; border: 0; }
td { overflow-wrap: break-word; } .key { overflow-wrap: anywhere; }
.muted { color: #666; }
.nowrap { white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
.charts { display: flex; flex-wrap: wrap; gap: 0.5em 2em; align-items: flex-start; }
.charts figure { margin: 0; max-width: 100%; }
.charts figure h3 { margin: 0.6em 0 0.2em; }
"""


def text(value: Any) -> str:
    """A value as escaped text: numbers to four significant digits, times to the second, null as a dash;
    cut to `display.TEXT_MAX` characters, so a field of megabytes does not make a page of megabytes."""
    if type(value) is str:
        return _text_of(value)
    if type(value) is float:
        return plain(value)  # digits, sign, point, comma, e, inf or nan: nothing to escape, at most ~400 characters
    return escape(display.shorten(plain(value)))


# A report escapes the same names, versions and keys hundreds of thousands of times.
@functools.lru_cache(maxsize=1 << 16)
def _text_of(value: str) -> str:
    return escape(display.shorten(value))


def plain(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def count(n: int, word: str) -> str:
    """`1 regression`, `3 regressions`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def link(href: str, label: str, title: str | None = None) -> str:
    extra = f' title="{text(title)}"' if title else ""
    return f'<a href="{escape(href)}"{extra}>{text(label)}</a>'


def commit(sha: str | None) -> str:
    """A commit as its first 12 characters, the whole sha on hover."""
    if not sha:
        return text(None)
    return f'<code title="{text(sha)}">{escape(sha[:12])}</code>'


def code(value: Any) -> str:
    return f"<code>{text(value)}</code>"


def anchor_id(kind: str, key: str) -> str:
    """A stable element id for any key (run ids hold `/` and `:`, which fragments would need escaped)."""
    return f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def fold(summary: str, body: str, summary_html: bool = False, anchor: str | None = None) -> str:
    """`body` folded under a one-line `summary` (text, or HTML built here when `summary_html`): the long parts
    of a page stay one line each until opened, so a page opens a few screens tall."""
    head = summary if summary_html else text(summary)
    attrs = f' id="{escape(anchor)}"' if anchor else ""
    return f'<details class="fold"{attrs}><summary>{head}</summary><div class="folded">{body}</div></details>'


def breakable(value: Any) -> str:
    """A long key (run id, snapshot, a sweep's JSON) as escaped text that wraps after each `/` and `,`, and
    anywhere when a part is still too long: unbroken, such keys made tables twice as wide as the page."""
    return '<span class="key">' + text(value).replace("/", "/<wbr>").replace(",", ",<wbr>") + "</span>"


def image(src: str, alt: str, size: tuple[int, int] | None = None, lazy: bool = False) -> str:
    attrs = f' width="{size[0]}" height="{size[1]}"' if size else ""
    if lazy:
        attrs += ' loading="lazy"'
    return f'<img src="{escape(src)}" alt="{text(alt)}"{attrs}>'


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[str] = (), row_attrs: Iterable[str] | None = None
) -> str:
    """A table of pre-built HTML cells; columns named in `numeric` are right-aligned."""
    right = [header in numeric for header in headers]
    head = "".join(f"<th>{escape(header)}</th>" for header in headers)
    attrs = iter(row_attrs) if row_attrs is not None else None
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{cell}</td>' if is_right else f"<td>{cell}</td>" for cell, is_right in zip(row, right, strict=True)
        )
        body.append(f"<tr{next(attrs) if attrs else ''}>{cells}</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


# The one script: a link into a folded part opens it (some browsers do on their own, others not).
OPEN_TARGET = (
    "function openTarget(){var e=location.hash&&document.getElementById(decodeURIComponent(location.hash.slice(1)));"
    "for(;e;e=e.parentElement){if(e.tagName==='DETAILS')e.open=true;}}"
    "addEventListener('hashchange',function(){openTarget();var t=document.getElementById(location.hash.slice(1));"
    "if(t)t.scrollIntoView();});openTarget();"
)


def page(title: str, body: str, footer: str, root: str = "") -> str:
    """A whole page; `root` is the way back to the site's top folder ('' or '../')."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{text(title)}</title>
<link rel="stylesheet" href="{root}style.css">
</head>
<body>
<nav><a href="{root}index.html">Overview</a><a href="{root}changes.html">Change points</a></nav>
<main>
{body}
</main>
<footer>{footer}</footer>
<script>{OPEN_TARGET}</script>
</body>
</html>
"""


class Names:
    """File-safe names for keys, distinct within one site and short whatever the key's length
    (the rule of `display.file_names`: the slug, with a hash of the key when cut or shared)."""

    def __init__(self, keys: Iterable[str]):
        self._names = display.file_names(keys, keep_underscore=True)

    def __getitem__(self, key: str) -> str:
        return self._names[key]
