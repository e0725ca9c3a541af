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

from pipelines.exports.report import history_charts as history
from pipelines.exports.report import implementations
from pipelines.exports.report.changes_page import commit_label
from pipelines.exports.report.implementations import Style
from pipelines.exports.report.pages import METRIC_ORDER, PASS_ORDER, Picture, metric_label, order
from pipelines.exports.report.svg import Drawing

MIN_COMMITS = 3
PANELS = 4
ChartKey = tuple[str, ...]  # GPU, pass, metric (and "rest" for the other workloads' picture)
CHART = ("gpu_name", "pass", "metric")


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
    rest: Picture | None = None  # the other workloads' panels (every workload reachable, issue 31), None when none


def _commits(series: pl.DataFrame) -> dict[tuple[str, str, str], list[tuple[str, str | None, Any]]]:
    """Per chart (GPU, pass, metric) of a kernel's series, its CI folders (commit, release, first run) in the order of
    their commit's place, then their first run: one group_by for the kernel, where one per chart cost more than
    reading their rows."""
    first = (
        series.group_by(*CHART, "benchmarked_commit", "release")
        .agg(pl.col("commit_at").min(), pl.col("observed_at").min())
        .sort(*CHART, "commit_at", "observed_at", "benchmarked_commit")
    )
    folders: dict[tuple[str, str, str], list[tuple[str, str | None, Any]]] = {}
    for gpu, pass_, metric, c, r, _, t in first.iter_rows():
        folders.setdefault((gpu, pass_, metric), []).append((c, r, t))
    return folders


def _placed(marks: pl.DataFrame, at: dict[str, int], folders: list[tuple[str, str | None, Any]]) -> list[tuple[dict[str, Any], int, int]]:
    """Each change point with the axis indexes it is drawn between: its runs' folders, or for a run the axis
    lacks (the data stream's), the first folder whose first run is at or after the change point's first run
    after, and the one before it; a change point after the newest folder is not drawn."""
    placed = []
    for mark in marks.iter_rows(named=True):
        after = at.get(mark["after_run_id"])
        if after is None and mark["observed_at"] is None:
            continue
        if after is None:
            after = next((i for i, (_, _, first) in enumerate(folders) if first >= mark["observed_at"]), None)
            if after is None or after == 0:
                continue
            before = after - 1
        else:
            before = at.get(mark["before_run_id"], max(after - 1, 0))
        placed.append((mark, before, after))
    return placed


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
    folders_of = _commits(series)
    changes_of = change_points.partition_by(*CHART, as_dict=True)
    for (gpu, pass_, metric), rows in sorted(series.group_by(*CHART), key=lambda g: _chart_order(g[0])):
        folders = folders_of[(gpu, pass_, metric)]
        if len(folders) < MIN_COMMITS:
            continue
        position = {(c, r): i for i, (c, r, _) in enumerate(folders)}
        at = {run: position[(c, r)] for run, c, r in rows.select("run_id", "benchmarked_commit", "release").iter_rows()}
        drawn = changes_of.get((gpu, pass_, metric), change_points.clear())
        if "below_min_effect" in drawn.columns:
            drawn = drawn.filter(~pl.col("below_min_effect").fill_null(False))
        placed = _placed(drawn, at, folders)
        marks = pl.DataFrame([m for m, _, _ in placed], schema=drawn.schema) if placed else drawn.clear()
        ranked = _rank(rows, marks)
        shown = ranked[:PANELS]
        lines = _lines(rows, at)
        panels = [_panel(workload, lines[workload], placed, at) for workload in shown]
        note = (
            f"x: the {len(folders)} commits upstream's CI benchmarked on this GPU, oldest to newest; "
            f"{len(shown)} of {len(ranked)} workloads, those with change points first, then the largest"
        )
        drawing = history.history_figure(
            [commit_label(c, r) for c, r, _ in folders],
            panels,
            rows["unit"][0],
            metric_label(metric),
            styles,
            note,
            from_zero=metric == "memory",
        )
        picture = draw((gpu, pass_, metric), drawing)
        marked = sum(len(p.marks) for p in panels)
        rest = None
        if len(ranked) > PANELS:
            others = [_panel(workload, lines[workload], placed, at) for workload in ranked[PANELS:]]
            note = f"the other {len(others)} workloads of this chart, the most informative first"
            labels = [commit_label(c, r) for c, r, _ in folders]
            figure = history.history_figure(
                labels, others, rows["unit"][0], metric_label(metric), styles, note, from_zero=metric == "memory"
            )
            rest = draw((gpu, pass_, metric, "rest"), figure)
        chart = HistoryChart(gpu, pass_, metric, picture, len(folders), shown, len(ranked), marked, rest)
        charts.setdefault(gpu, []).append(chart)
    return charts


def _chart_order(key: tuple[Any, ...]) -> tuple:
    gpu, pass_, metric = key
    return (gpu, order(metric, METRIC_ORDER), order(pass_, PASS_ORDER))


def _lines(rows: pl.DataFrame, at: dict[str, int]) -> dict[str, dict[tuple[str, str], list[tuple[int, float]]]]:
    """Per workload, per implementation (in the order the rows first show it), its points (x, value) in row order:
    one pass over a chart's rows, where a filter and a group_by per panel read them all once per panel."""
    lines: dict[str, dict[tuple[str, str], list[tuple[int, float]]]] = {}
    for workload, provider, backend, run, value in rows.select("workload_slug", "provider", "backend", "run_id", "value").iter_rows():
        lines.setdefault(workload, {}).setdefault((provider, backend), []).append((at[run], value))
    return lines


def _panel(
    workload: str,
    lines: dict[tuple[str, str], list[tuple[int, float]]],
    placed: list[tuple[dict[str, Any], int, int]],
    at: dict[str, int],
) -> history.Panel:
    panel = history.Panel(history.panel_title(workload))
    for (provider, backend), points in lines.items():
        panel.lines.append(history.Line(implementations.label(provider, backend), points))
    for mark, before, after in placed:
        if mark["workload_slug"] != workload:
            continue
        panel.marks.append(
            history.Mark(
                implementations.label(mark["provider"], mark["backend"]),
                before,
                after,
                # The ring marks the first run after: only where that run is on this axis.
                mark["after_value"] if mark["after_run_id"] in at else None,
                mark["ratio"],
                mark["verdict"],
                mark["cause"],
                mark.get("status") == "candidate",
            )
        )
    return panel
