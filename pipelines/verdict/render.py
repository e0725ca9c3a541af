"""A verdict as text (a terminal), markdown (a pull request comment) or JSON (a program).

The first line says the outcome and its exit code (0 judged and no kernel slower, 1 some kernel slower, 3
nothing could be judged), and which implementation's kernels got slower, by how much, on which GPU. Text and
markdown show values in ms or MiB; JSON keeps the warehouse's canonical units (ns, bytes) and names them in
`unit`.

Nothing a contender wrote reaches the output as it was written: every value from the data (kernel, provider,
GPU, workload, file name) has its control characters removed in every format (a carriage return, an ANSI
escape), and in markdown it is set in a code span fenced with more backticks than it holds (no link, image,
mention, emphasis or HTML can come of it), or in a fenced code block (the notes). The markdown's own words
carry no data, and `<details>` summaries hold only numbers and fixed words.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from pipelines.core import display
from pipelines.core.metadata import markdown_table
from pipelines.core.settings import DEFAULT_BASELINES
from pipelines.verdict import judge
from pipelines.verdict.scoreboard import described, scoreboard

# GitHub refuses a comment over 65,536 characters: the markdown keeps under this, listing fewer rows.
MARKDOWN_BUDGET = 60_000
CELL = 80  # characters of a value from the data in a markdown cell
NOTE = 500  # characters of a note
HUMAN = {"ns": (1e6, "ms"), "bytes": (2**20, "MiB")}
# C0 and C1 controls and DEL (a carriage return, an ANSI escape); a tab or line break becomes a space.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_BREAKS = re.compile(r"[\t\n\r]+")
TITLES = {0: "PASS", 1: "SLOWER", 2: "CANNOT JUDGE", 3: "NOTHING JUDGED"}
KERNEL_HEADER = ["kernel", "pass", "metric", "provider", "change", "runs"]
OTHER_HEADER = ["kernel", "pass", "metric", "provider", "verdict", "change or why"]
RUN_HEADER = ["kernel", "pass", "provider", "workload", "baseline → contender", "change"]
BOARD_HEADER = ["kernel", "pass", "metric", "provider", "against", "this run"]


def clean(value: Any) -> str:
    """`value` as text without control characters: line breaks and tabs become one space, the rest is removed."""
    text = "" if value is None else str(value)
    return _CONTROLS.sub("", _BREAKS.sub(" ", text.replace("\r\n", " ")))


def code(value: Any, limit: int = CELL) -> str:
    """A markdown code span of `value`, cleaned and cut to `limit`: fenced by one backtick more than its longest
    run of them, padded where it starts or ends with one, so nothing in it is markdown or HTML."""
    text = display.shorten(clean(value), limit)
    if not text.strip():
        return ""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(lines: Sequence[str]) -> str:
    """A fenced code block of `lines` (cleaned), its fence longer than any run of backticks inside."""
    body = "\n".join(display.shorten(clean(line), NOTE) for line in lines)
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
    return f"{fence}text\n{body}\n{fence}"


def _human(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    scale, _ = HUMAN.get(unit, (1, unit))
    return f"{value / scale:.4g}"


def _unit(unit: str) -> str:
    return HUMAN.get(unit, (1, unit))[1]


def _baselines(verdict: Any) -> tuple[str, ...]:
    return tuple(getattr(verdict, "baseline_providers", DEFAULT_BASELINES))


def _count(frame: pl.DataFrame, word: str) -> int:
    return frame.filter(pl.col("verdict") == word).height


def _slower_group(group: dict, markdown: bool) -> str:
    """`liger cross_entropy speed on NVIDIA H200 (triton): backward 1.28x slower, forward 1.21x slower`."""
    show = code if markdown else clean
    passes = ", ".join(f"{show(k['pass'])} {_change(k)}" for k in group["_k"])
    where = f"{show(group['gpu_name'])} ({show(group['backend'])})"
    return f"{show(group['provider'])} {show(group['kernel'])} {show(group['metric'])} on {where}: {passes}"


def _change(k: dict) -> str:
    if k.get("reason") == judge.FAILED or (k.get("reason") or "").endswith(judge.FAILED):
        return "failed"
    return described(k.get("geomean_ratio")) or ""


def headline(verdict: Any, markdown: bool = False) -> str:
    """The first line: the outcome and its exit code, and what matters most under it."""
    kernels, code_ = verdict.kernels, verdict.exit_code
    title = f"{TITLES.get(code_, verdict.verdict.upper())} (exit {code_})"
    judged = kernels.filter(pl.col("verdict").is_in(["slower", "faster", "same"])).height
    counts = ", ".join(f"{_count(kernels, w)} {w}" for w in judge.VERDICTS if _count(kernels, w))
    if code_ == 1:
        slower = kernels.filter(pl.col("verdict") == "slower")
        ours = slower.filter(~pl.col("provider").is_in(list(_baselines(verdict))))
        named = ours if ours.height else slower
        groups = named.group_by("provider", "kernel", "metric", "gpu_name", "backend", maintain_order=True).agg(
            pl.struct(pl.all()).alias("_k")
        )
        listed = "; ".join(_slower_group(g, markdown) for g in groups.head(3).iter_rows(named=True))
        more = f"; and {groups.height - 3} more" if groups.height > 3 else ""
        return f"{title}: {slower.height} of {kernels.height} kernels slower: {listed}{more}"
    if code_ == 3:
        reasons = _top_reasons(kernels)
        return f"{title}: none of {kernels.height} kernels could be judged ({counts}){reasons}"
    if _count(kernels, "slower"):  # only baseline providers: reported, never failed
        return f"{title}: no kernel that gates is slower; {judged} of {kernels.height} kernels judged ({counts}; the slower are baseline providers)"
    return f"{title}: no kernel slower; {judged} of {kernels.height} kernels judged ({counts})"


def _top_reasons(kernels: pl.DataFrame) -> str:
    reasons = kernels.filter(pl.col("reason").is_not_null()).group_by("reason").len().sort("len", "reason", descending=[True, False])
    if reasons.is_empty():
        return ""
    return ": " + "; ".join(f"{clean(r['reason'])} ({r['len']})" for r in reasons.head(2).iter_rows(named=True))


def _against(verdict: Any) -> list[str]:
    """Which files and rules judged it, and the noise (our words and numbers; file names given apart)."""
    bases = getattr(verdict, "baselines", None)
    effect = getattr(verdict, "min_effect", judge.MIN_EFFECT)
    if bases is not None:
        pair = getattr(verdict, "pair_noise", None)
        noise = f"; this machine's noise between the files: {pair * 100:.1f}% of one run" if pair is not None else ""
        return [
            f"Baseline: {len(bases)} baseline file(s) of the same machine; a run pairs with the runs of the same kernel, "
            f"workload, pass, metric, GPU, provider and backend; ratio = baseline median / contender (above 1: faster){noise}.",
            f"A run is slower or faster beyond {judge.RUN_Z:g} x its noise and the baseline's and by at least {effect * 100:g}%, "
            "kernels also relative to the baseline provider in the same run (a move they share is the host's); "
            "launch-bound points (time not growing with the work) and unknown noise are inconclusive.",
        ]
    return [
        "Baseline: each series' history on the same GPU in the warehouse; ratio = level / contender (above 1: faster).",
        judge.describe(effect),
    ]


def _files(verdict: Any) -> list[tuple[str, str]]:
    """(role, file name) of the contender and its baseline files."""
    files = [("contender", verdict.contender.path.name)]
    files += [("baseline", b.path.name) for b in getattr(verdict, "baselines", None) or ()]
    return files


def _holds_lines(verdict: Any) -> list[str]:
    """A line per (kernel, GPU) with `no baseline` naming what the warehouse's history holds of it there."""
    holds = getattr(verdict, "holds", None)
    missing = verdict.kernels.filter(pl.col("verdict") == "no baseline").select("kernel", "gpu_name").unique().sort("kernel", "gpu_name")
    if missing.is_empty() or holds is None:
        return []
    lines = []
    for kernel, gpu in missing.iter_rows():
        held = holds.filter((pl.col("kernel") == kernel) & (pl.col("gpu_name") == gpu))
        if held.is_empty():
            lines.append(f"no baseline for {clean(kernel)} on {clean(gpu)}: the history holds no run of it on that GPU")
            continue
        for h in held.iter_rows(named=True):
            newest = h["newest"].date().isoformat() if h["newest"] else "?"
            examples = ", ".join(clean(e) for e in (h["examples"] or []))
            lines.append(
                f"no baseline for {clean(kernel)} on {clean(gpu)}: the history holds {h['workloads']} other workload(s) "
                f"({clean(h['backend'])}; e.g. {examples}), newest {newest}, version {clean(h['liger_version'])}"
            )
    return lines


def _board(verdict: Any) -> pl.DataFrame:
    board = getattr(verdict, "scoreboard", None)
    return board if board is not None else scoreboard(verdict.contender.runs)


# --- text ---------------------------------------------------------------------------------------------------


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def _kernel_cells(k: dict, show: Any) -> list[str]:
    return [show(k["kernel"]), show(k["pass"]), show(k["metric"]), show(k["provider"])]


def _runs_cell(k: dict) -> str:
    return f"{k['slower']}/{k['judged']} slower" if k["verdict"] == "slower" else f"{k['judged']}/{k['runs']} judged"


def _why(k: dict) -> str:
    if k["verdict"] in ("inconclusive", "no baseline"):
        return clean(k.get("reason") or "")
    detect = k.get("min_detectable")
    change = _change(k)
    return f"{change} (detects {detect * 100:.0f}%)" if detect is not None and change else change


def _by_place(frame: pl.DataFrame) -> list[tuple[tuple[str, str], pl.DataFrame]]:
    """`frame` split by (gpu_name, backend), in order."""
    if frame.is_empty():
        return []
    places = frame.select("gpu_name", "backend").unique().sort("gpu_name", "backend").rows()
    return [((g, b), frame.filter((pl.col("gpu_name") == g) & (pl.col("backend") == b))) for g, b in places]


def render_text(verdict: Any) -> str:
    kernels = verdict.kernels
    parts = [headline(verdict)]
    parts += [f"{role}: {clean(name)}" for role, name in _files(verdict)]
    parts += _against(verdict)
    parts += [clean(m) for m in verdict.messages()]
    parts += _holds_lines(verdict)
    for (gpu, backend), frame in _by_place(kernels):
        parts += ["", f"== {clean(gpu)} ({clean(backend)}) =="]
        slower = frame.filter(pl.col("verdict") == "slower")
        if slower.height:
            rows = [[*_kernel_cells(k, clean), _why(k), _runs_cell(k)] for k in slower.iter_rows(named=True)]
            parts += [f"Slower kernels ({slower.height}):", _aligned(KERNEL_HEADER, rows)]
        else:
            parts.append("No kernel is slower.")
        rest = frame.filter(pl.col("verdict") != "slower")
        if rest.height:
            rows = [[*_kernel_cells(k, clean), k["verdict"], _why(k)] for k in rest.iter_rows(named=True)]
            parts += [f"Other kernels ({rest.height}):", _aligned(OTHER_HEADER, rows)]
    slower_runs = verdict.runs.filter(pl.col("verdict") == "slower")
    if slower_runs.height:
        parts += ["", f"Slower runs ({slower_runs.height}):", _aligned(RUN_HEADER, _run_rows(slower_runs, clean))]
    board = _board(verdict)
    if board.height:
        parts += ["", "Scoreboard of the contender's own run (each implementation against the baseline provider, geomean):"]
        parts.append(_aligned(BOARD_HEADER, _board_rows(board, clean)))
    parts.append("(every run: --format json)")
    return "\n".join(parts)


def _run_rows(runs: pl.DataFrame, show: Any) -> list[list[str]]:
    rows = []
    for r in runs.sort("kernel", "pass", "provider", "workload_slug").iter_rows(named=True):
        unit = _unit(r["unit"])
        values = f"{_human(r['baseline_value'], r['unit'])} → {_human(r['contender_value'], r['unit']) or 'failed'} {unit}"
        change = "failed" if r.get("reason") == judge.FAILED else described(r["ratio"])
        rows.append([show(r["kernel"]), show(r["pass"]), show(r["provider"]), show(r["workload_slug"]), values, change])
    return rows


def _board_rows(board: pl.DataFrame, show: Any) -> list[list[str]]:
    return [
        [
            show(b["kernel"]),
            show(b["pass"]),
            show(b["metric"]),
            show(b["provider"]),
            show(b["baseline_provider"]),
            described(b["geomean_ratio"]),
        ]
        for b in board.iter_rows(named=True)
    ]


# --- markdown -----------------------------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]], budget: int) -> tuple[str, int]:
    """A markdown table of as many of `rows` as fit in `budget` characters; (table, rows shown)."""
    empty = size = len(markdown_table(header, [], width=None))
    shown = []
    for row in rows:
        line = len(markdown_table(header, [row], width=None)) - empty
        if size + line > budget:
            break
        shown.append(row)
        size += line
    return markdown_table(header, shown, width=None), len(shown)


def _folded(summary: str, body: str) -> str:
    # The summary holds fixed words and numbers only: it is raw HTML.
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def _cut(shown: int, total: int) -> str:
    return f", the first {shown} shown (all: --format json)" if shown < total else ""


def render_markdown(verdict: Any) -> str:
    """A pull request comment: the headline, then per GPU and backend (a heading) the slower kernels, everything
    else folded in `<details>`: the slower runs, the other kernels, the scoreboard; under MARKDOWN_BUDGET."""
    files = " against ".join(f"{role} {code(name)}" for role, name in _files(verdict)[:1]) + "".join(
        f", baseline {code(name)}" for role, name in _files(verdict)[1:]
    )
    notes = [*verdict.messages(), *_holds_lines(verdict)]
    parts = [f"### Benchmark verdict: {headline(verdict, markdown=True)}", f"{files}.\n" + "\n".join(_against(verdict))]
    if notes:
        parts.append(code_block(notes))
    left = MARKDOWN_BUDGET - sum(len(p) + 2 for p in parts) - 2000

    def table(header: list[str], rows: list[list[str]], share: float) -> tuple[str, int]:
        nonlocal left
        text, shown = _table(header, rows, max(int(left * share), 0))
        left -= len(text)
        return text, shown

    board = _board(verdict)
    for (gpu, backend), frame in _by_place(verdict.kernels):
        parts.append(f"#### {code(gpu)} · {code(backend)}")
        slower = frame.filter(pl.col("verdict") == "slower")
        if slower.height:
            rows = [[*_kernel_cells(k, code), _why(k), _runs_cell(k)] for k in slower.iter_rows(named=True)]
            text, shown = table(KERNEL_HEADER, rows, 0.3)
            parts.append(f"{slower.height} slower kernel(s){_cut(shown, slower.height)}:\n\n{text}")
            runs = verdict.runs.filter((pl.col("verdict") == "slower") & (pl.col("gpu_name") == gpu) & (pl.col("backend") == backend))
            text, shown = table(RUN_HEADER, _run_rows(runs, code), 0.4)
            parts.append(_folded(f"Slower runs ({runs.height}{_cut(shown, runs.height)})", text))
        else:
            parts.append("No kernel is slower.")
        rest = frame.filter(pl.col("verdict") != "slower")
        if rest.height:
            counts = ", ".join(f"{_count(rest, w)} {w}" for w in judge.VERDICTS if _count(rest, w))
            rows = [[*_kernel_cells(k, code), k["verdict"], _why(k)] for k in rest.iter_rows(named=True)]
            text, shown = table(OTHER_HEADER, rows, 0.5)
            parts.append(_folded(f"The other {rest.height} kernels: {counts}{_cut(shown, rest.height)}", text))
        mine = board.filter((pl.col("gpu_name") == gpu) & (pl.col("backend") == backend)) if board.height else board
        if mine.height:
            text, shown = table(BOARD_HEADER, _board_rows(mine, code), 0.5)
            summary = f"Scoreboard of this run: {mine.height} implementation(s) against the baseline provider{_cut(shown, mine.height)}"
            parts.append(_folded(summary, text))
    return "\n\n".join(parts) + "\n"


# --- JSON ---------------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


RUN_FIELDS = (
    "kernel",
    "pass",
    "metric",
    "gpu_name",
    "workload_slug",
    "provider",
    "backend",
    "baseline_value",
    "contender_value",
    "ratio",
    "verdict",
    "reason",
    "min_detectable",
    "launch_bound",
    "unit",
    "baseline_points",
    "baseline_low",
    "baseline_high",
    "noise",
    "noise_method",
    "outside",
    "spread",
    "run_id",
)


def render_json(verdict: Any) -> str:
    c = verdict.contender
    runs = verdict.runs.select([f for f in RUN_FIELDS if f in verdict.runs.columns])
    board = _board(verdict)
    document = {
        "verdict": verdict.verdict,
        "exit_code": verdict.exit_code,
        "headline": headline(verdict),
        "contender": clean(c.path),
        "baselines": [clean(b.path) for b in getattr(verdict, "baselines", None) or ()],
        "gpus": [clean(g) for g in c.gpus],
        "baseline": {
            "points": getattr(verdict, "baseline_points", None) or len(getattr(verdict, "baselines", None) or ()) or None,
            "run_z": judge.RUN_Z,
            "kernel_alpha": judge.KERNEL_ALPHA,
            "min_effect": getattr(verdict, "min_effect", judge.MIN_EFFECT),
            "noise": verdict.noise_source,
        },
        "messages": [clean(m) for m in verdict.messages()],
        "history_holds": _holds_lines(verdict),
        "runs": [{k: _plain(v) for k, v in row.items()} for row in runs.iter_rows(named=True)],
        "kernels": [{k: _plain(v) for k, v in row.items()} for row in verdict.kernels.iter_rows(named=True)],
        "scoreboard": [{k: _plain(v) for k, v in row.items()} for row in board.iter_rows(named=True)],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
