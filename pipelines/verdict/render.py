"""A verdict as text (a terminal), markdown (a pull request comment) or JSON (a program).

Text and markdown show values in ms or MiB; JSON keeps the warehouse's canonical units (ns, bytes) and
names them in `unit`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from pipelines.core import display
from pipelines.core.metadata import markdown_table
from pipelines.verdict import judge
from pipelines.verdict.verdict import BASELINE_POINTS, RUN_COLUMNS, Verdict

# GitHub refuses a comment over 65,536 characters: the markdown keeps under this, listing fewer runs.
MARKDOWN_BUDGET = 60_000
CELL = 160  # characters of a markdown cell (a kernel or workload name from the data)
KERNEL_HEADER = [
    "verdict",
    "kernel",
    "pass",
    "metric",
    "provider",
    "backend",
    "gpu",
    "runs",
    "geomean",
    "faster",
    "slower",
    "same",
    "no baseline",
]
RUN_HEADER = ["verdict", "kernel", "pass", "metric", "workload", "provider", "backend", "baseline", "contender", "unit", "ratio"]
HUMAN = {"ns": (1e6, "ms"), "bytes": (2**20, "MiB")}


def method_line(verdict: Verdict, local: bool = True) -> str:
    """How it was judged; `local` names the warehouse's folder (a pull request comment does not)."""
    where = f" in {verdict.warehouse_dir}" if local else ""
    source = f"the table {verdict.noise_source}"
    return (
        f"Baseline: each series' latest {BASELINE_POINTS} runs on the same GPU{where}; ratio = their median / "
        f"contender (above 1: faster or leaner). A run is slower or faster when it leaves their range by more than "
        f"{judge.RUN_Z:g} x sqrt(2) x the series' noise of one run, {source}."
    )


def headline(verdict: Verdict) -> str:
    counts = {v: verdict.kernels.filter(pl.col("verdict") == v).height for v in judge.VERDICTS}
    parts = ", ".join(f"{counts[v]} {v}" for v in judge.VERDICTS if counts[v])
    return f"{verdict.verdict.upper()}: {verdict.kernels.height} kernels ({parts})"


def contender_line(verdict: Verdict, local: bool = True) -> str:
    c = verdict.contender
    judged = verdict.runs.filter(pl.col("ratio").is_not_null()).height
    backends = ", ".join(sorted(set(c.runs["backend"].to_list())))
    return f"Contender: {c.path if local else c.path.name} ({c.runs.height} runs, {judged} with a baseline) on {', '.join(c.gpus)}, backend {backends}"


def _human(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    scale, _ = HUMAN.get(unit, (1, unit))
    return f"{value / scale:.4g}"


def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def kernel_rows(kernels: pl.DataFrame) -> list[list[str]]:
    return [
        [
            k["verdict"],
            k["kernel"],
            k["pass"],
            k["metric"],
            k["provider"],
            k["backend"],
            k["gpu_name"],
            str(k["runs"]),
            _ratio(k["geomean_ratio"]),
            str(k["faster"]),
            str(k["slower"]),
            str(k["same"]),
            str(k["no_baseline"]),
        ]
        for k in kernels.iter_rows(named=True)
    ]


def run_rows(runs: pl.DataFrame) -> list[list[str]]:
    return [
        [
            r["verdict"],
            r["kernel"],
            r["pass"],
            r["metric"],
            r["workload_slug"],
            r["provider"],
            r["backend"],
            _human(r["baseline_value"], r["unit"]),
            _human(r["contender_value"], r["unit"]),
            HUMAN.get(r["unit"], (1, r["unit"]))[1],
            _ratio(r["ratio"]),
        ]
        for r in runs.iter_rows(named=True)
    ]


def ordered_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """Slower runs first, the furthest out first; then faster, same and no baseline."""
    order = pl.col("verdict").replace_strict({v: i for i, v in enumerate(judge.VERDICTS)}, return_dtype=pl.Int8)
    return runs.sort(
        order, pl.col("outside").abs(), *judge.KERNEL_KEY, "workload_slug", descending=[False, True] + [False] * 7, nulls_last=True
    )


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def render_text(verdict: Verdict) -> str:
    runs = ordered_runs(verdict.runs)
    slower = runs.filter(pl.col("verdict") == "slower")
    parts = [headline(verdict), contender_line(verdict), method_line(verdict), *verdict.messages(), ""]
    parts += ["Kernels (slower first):", _aligned(KERNEL_HEADER, kernel_rows(verdict.kernels)), ""]
    if slower.height:
        parts += [f"Slower runs ({slower.height}):", _aligned(RUN_HEADER, run_rows(slower))]
    else:
        parts.append("No run is slower.")
    parts.append("(every run: --format json)")
    return "\n".join(parts)


def _table(header: list[str], rows: list[list[str]], budget: int) -> tuple[str, int]:
    """A markdown table of as many of `rows` as fit in `budget` characters, cells cut to CELL; (table, rows shown)."""
    empty = size = len(markdown_table(header, [], width=CELL))
    shown = []
    for row in rows:
        line = len(markdown_table(header, [row], width=CELL)) - empty
        if size + line > budget:
            break
        shown.append(row)
        size += line
    return markdown_table(header, shown, width=CELL), len(shown)


def _folded(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def _cut(shown: int, total: int) -> str:
    return f", the first {shown} shown (all: `--format json`)" if shown < total else ""


def render_markdown(verdict: Verdict) -> str:
    """A pull request comment: the slower and faster kernels, the slower runs, everything else folded; under
    MARKDOWN_BUDGET characters, each table listing the rows that fit (and saying so)."""
    runs = ordered_runs(verdict.runs)
    slower, others = runs.filter(pl.col("verdict") == "slower"), runs.filter(pl.col("verdict") != "slower")
    moved = verdict.kernels.filter(pl.col("verdict").is_in(["slower", "faster"]))
    calm = verdict.kernels.filter(~pl.col("verdict").is_in(["slower", "faster"]))
    notes = "".join(f"\n- {display.shorten(line, 500)}" for line in verdict.messages())
    parts = [
        f"### Benchmark verdict: {headline(verdict)}",
        display.shorten(f"{contender_line(verdict, local=False)}.", 500) + f"\n{method_line(verdict, local=False)}{notes}",
    ]
    left = MARKDOWN_BUDGET - sum(len(p) for p in parts) - 1000  # the headings and folds below

    def table(header: list[str], rows: list[list[str]], share: float) -> tuple[str, int]:
        nonlocal left
        text, shown = _table(header, rows, int(left * share))
        left -= len(text)
        return text, shown

    if moved.height:
        text, shown = table(KERNEL_HEADER, kernel_rows(moved), 0.3)
        parts.append(text + ("\n\n" + _cut(shown, moved.height).lstrip(", ") if shown < moved.height else ""))
    else:
        parts.append("No kernel is slower or faster.")
    if slower.height:
        text, shown = table(RUN_HEADER, run_rows(slower), 0.5)
        parts += [f"#### Slower runs ({slower.height}{_cut(shown, slower.height)})", text]
    else:
        parts.append("No run is slower.")
    if calm.height:
        text, shown = table(KERNEL_HEADER, kernel_rows(calm), 0.7)
        parts.append(_folded(f"The other {calm.height} kernels (same, no baseline){_cut(shown, calm.height)}", text))
    if others.height:
        text, shown = table(RUN_HEADER, run_rows(others), 1.0)
        parts.append(_folded(f"The other {others.height} runs (faster, same, no baseline){_cut(shown, others.height)}", text))
    return "\n\n".join(parts) + "\n"


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def render_json(verdict: Verdict) -> str:
    c = verdict.contender
    document = {
        "verdict": verdict.verdict,
        "contender": str(c.path),
        "gpus": c.gpus,
        "baseline": {"points": BASELINE_POINTS, "run_z": judge.RUN_Z, "kernel_alpha": judge.KERNEL_ALPHA, "noise": verdict.noise_source},
        "messages": verdict.messages(),
        "runs": [
            {k: _plain(v) for k, v in row.items()}
            for row in verdict.runs.select(*RUN_COLUMNS, "baseline_low", "baseline_high", "outside", "spread").iter_rows(named=True)
        ],
        "kernels": [{k: _plain(v) for k, v in row.items()} for row in verdict.kernels.iter_rows(named=True)],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
