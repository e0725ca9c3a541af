"""Which history charts a kernel's page gets, and what each draws.

One chart per GPU, pass and metric that upstream's CI benchmarked at MIN_COMMITS commits or more
(fewer is no history: the sweep charts show those). A chart has at most PANELS workloads, the most
informative first: those with change points (code before host, the largest shift first), then the
largest shapes (highest median value), whose timings say most about the kernel and least about
launch overhead. Every change point of a drawn series is marked; the page lists all of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipelines.exports.report import history, implementations
from pipelines.exports.report.changes_page import commit_label
from pipelines.exports.report.implementations import Style
from pipelines.exports.report.pages import METRIC_ORDER, PASS_ORDER, Picture, metric_label, order
from pipelines.exports.report.svg import Drawing

MIN_COMMITS = 3
PANELS = 4
ChartKey = tuple[str, str, str]  # GPU, pass, metric


@dataclass(frozen=True)
class HistoryChart:
    gpu: str
    pass_: str
    metric: str
    picture: Picture
    commits: int
    workloads_shown: list[str]
    workloads: int
    marked: int  # change points drawn on it


def _commits(rows: pl.DataFrame) -> list[tuple[str, str | None]]:
    """The chart's CI folders (commit, release) in the order of their first run."""
    first = rows.group_by("benchmarked_commit", "release").agg(pl.col("observed_at").min()).sort("observed_at", "benchmarked_commit")
    return [(c, r) for c, r, _ in first.iter_rows()]


def _rank(rows: pl.DataFrame, marks: pl.DataFrame) -> list[str]:
    """The chart's workloads, the most informative first (see the module's docstring)."""
    stats: dict[str, list[float]] = {}
    for workload, value in rows.group_by("workload_slug").agg(pl.col("value").median()).iter_rows():
        stats[workload] = [0, 0, 0.0, -(value or 0.0)]
    for mark in marks.iter_rows(named=True):
        entry = stats.get(mark["workload_slug"])
        if entry is None:
            continue
        entry[0] -= mark["cause"] != "host"
        entry[1] -= 1
        ratio = mark["ratio"] if mark["ratio"] and mark["ratio"] > 0 else 1.0
        entry[2] = min(entry[2], -abs(math.log(ratio)))
    return sorted(stats, key=lambda w: (*stats[w], w))


def kernel_histories(
    series: pl.DataFrame,
    change_points: pl.DataFrame,
    styles: Mapping[str, Style],
    draw: Callable[[ChartKey, Drawing], Picture],
) -> dict[str, list[HistoryChart]]:
    """Per GPU, the history charts of one kernel's CI series, each drawn through `draw`."""
    charts: dict[str, list[HistoryChart]] = {}
    if not series.height:
        return charts
    for (gpu, pass_, metric), rows in sorted(series.group_by("gpu_name", "pass", "metric"), key=lambda g: _chart_order(g[0])):
        folders = _commits(rows)
        if len(folders) < MIN_COMMITS:
            continue
        position = {folder: i for i, folder in enumerate(folders)}
        at = {run: position[(c, r)] for run, c, r in rows.select("run_id", "benchmarked_commit", "release").iter_rows()}
        marks = change_points.filter(
            (pl.col("gpu_name") == gpu)
            & (pl.col("pass") == pass_)
            & (pl.col("metric") == metric)
            & pl.col("before_run_id").is_in(list(at))
            & pl.col("after_run_id").is_in(list(at))
        )
        ranked = _rank(rows, marks)
        shown = ranked[:PANELS]
        panels = [_panel(workload, rows, marks, at) for workload in shown]
        note = (
            f"x: the {len(folders)} commits upstream's CI benchmarked on this GPU, oldest to newest; "
            f"{len(shown)} of {len(ranked)} workloads, those with change points first, then the largest"
        )
        drawing = history.history_figure(
            [commit_label(c, r) for c, r in folders], panels, rows["unit"][0], metric_label(metric), styles, note
        )
        picture = draw((gpu, pass_, metric), drawing)
        marked = sum(len(p.marks) for p in panels)
        charts.setdefault(gpu, []).append(HistoryChart(gpu, pass_, metric, picture, len(folders), shown, len(ranked), marked))
    return charts


def _chart_order(key: tuple[Any, ...]) -> tuple:
    gpu, pass_, metric = key
    return (gpu, order(metric, METRIC_ORDER), order(pass_, PASS_ORDER))


def _panel(workload: str, rows: pl.DataFrame, marks: pl.DataFrame, at: dict[str, int]) -> history.Panel:
    mine = rows.filter(pl.col("workload_slug") == workload)
    panel = history.Panel(history.panel_title(workload))
    for (provider, backend), points in mine.group_by("provider", "backend", maintain_order=True):
        name = implementations.label(provider, backend)
        panel.lines.append(history.Line(name, [(at[run], value) for run, value in points.select("run_id", "value").iter_rows()]))
    for mark in marks.filter(pl.col("workload_slug") == workload).iter_rows(named=True):
        panel.marks.append(
            history.Mark(
                implementations.label(mark["provider"], mark["backend"]),
                at[mark["before_run_id"]],
                at[mark["after_run_id"]],
                mark["after_value"],
                mark["ratio"],
                mark["verdict"],
                mark["cause"],
            )
        )
    return panel
