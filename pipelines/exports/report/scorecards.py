"""The scorecard's pictures and totals: per GPU and metric a heat map of each implementation's
geometric-mean ratio to its baseline, and the overview's summary over all kernels.

`kernel_scorecard` has a row per implementation (provider, backend) and baseline implementation
(`baseline_provider`, `baseline_backend`); every row and total names the baseline it is taken against.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import polars as pl

from pipelines.exports.report import html, implementations, pages, svg
from pipelines.exports.report.heatmaps import HeatCell, scorecard_heatmap

Draw = Callable[[str, svg.Drawing], pages.Picture]


def implementation(row: dict[str, Any]) -> str:
    return implementations.label(row["provider"], row["backend"])


def baseline(row: dict[str, Any]) -> str:
    return implementations.label(row["baseline_provider"], row["baseline_backend"])


def weighted_geomean(frame: pl.DataFrame) -> float:
    weights = frame["n_groups"].to_list()
    logs = [math.log(g) for g in frame["geomean_ratio"].to_list()]
    return math.exp(sum(w * x for w, x in zip(weights, logs, strict=True)) / sum(weights))


def heatmaps(scorecard: pl.DataFrame, gpus: list[str], draw: Draw) -> dict[str, list[pages.Heatmap]]:
    """Per GPU and metric, the scorecard heat map (drawn) and its totals per implementation."""
    gpu_names = html.Names(gpus)
    result: dict[str, list[pages.Heatmap]] = {}
    scorecard = scorecard.filter(pl.col("geomean_ratio") > 0)
    for gpu in gpus:
        mine = scorecard.filter(pl.col("gpu_name") == gpu)
        for metric in sorted(mine["metric"].unique().to_list(), key=lambda m: pages.order(m, pages.METRIC_ORDER)):
            rows = sorted(
                mine.filter(pl.col("metric") == metric).iter_rows(named=True),
                key=lambda r: (r["kernel"], pages.order(r["pass"], pages.PASS_ORDER), baseline(r), implementation(r)),
            )
            cells = [
                HeatCell(f"{r['kernel']} · {r['pass']} vs {baseline(r)}", implementation(r), r["geomean_ratio"], r["wins"], r["losses"])
                for r in rows
            ]
            title = f"{gpu} · {pages.metric_label(metric)}: geometric-mean ratio to the baseline, wins/losses"
            picture = draw(f"img/scorecard/{gpu_names[gpu]}-{html.Names([metric])[metric]}.svg", scorecard_heatmap(cells, title))
            result.setdefault(gpu, []).append(pages.Heatmap(metric, picture, _totals(rows)))
    return result


def _totals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per implementation and baseline: how many scorecard rows and groups, wins, losses and draws."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((implementation(row), baseline(row)), []).append(row)
    totals = []
    for (name, base), members in sorted(groups.items()):
        frame = pl.DataFrame({"n_groups": [r["n_groups"] for r in members], "geomean_ratio": [r["geomean_ratio"] for r in members]})
        totals.append(
            {
                "provider": name,
                "baseline": base,
                "rows": len(members),
                "n_groups": sum(r["n_groups"] for r in members),
                "wins": sum(r["wins"] for r in members),
                "losses": sum(r["losses"] for r in members),
                "draws": sum(r["draws"] for r in members),
                "geomean_ratio": weighted_geomean(frame),
            }
        )
    return totals


def summary_cells(scorecard: pl.DataFrame) -> dict[str, list[HeatCell]]:
    """Per metric, a cell per (GPU, implementation): the geometric mean over that GPU's kernels."""
    scorecard = scorecard.filter(pl.col("geomean_ratio") > 0)
    panels: dict[str, list[HeatCell]] = {}
    for metric in sorted(scorecard["metric"].unique().to_list(), key=lambda m: pages.order(m, pages.METRIC_ORDER)):
        # In the scorecard's order: the picture's bytes must not change from one build to the next.
        cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in scorecard.filter(pl.col("metric") == metric).iter_rows(named=True):
            cells.setdefault((row["gpu_name"], implementation(row)), []).append(row)
        panels[pages.metric_label(metric)] = [
            HeatCell(
                gpu,
                name,
                weighted_geomean(
                    pl.DataFrame({"n_groups": [r["n_groups"] for r in rs], "geomean_ratio": [r["geomean_ratio"] for r in rs]})
                ),
                sum(r["wins"] for r in rs),
                sum(r["losses"] for r in rs),
            )
            for (gpu, name), rs in cells.items()
        ]
    return panels
