"""The report's site: every page and picture of it written into one folder, from `ReportData`.

What goes where: the overview (`index.html`) with the summary and scorecard heat maps, a page per
kernel with its sweep charts and runs, the changes page with its timeline. `build` decides when and
where the site is written and swaps it into place.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.core import display
from pipelines.exports.report import html, pages, svg
from pipelines.exports.report.data import ReportData
from pipelines.exports.report.heatmaps import HeatCell, scorecard_heatmap, summary_heatmap
from pipelines.exports.report.kernel_pages import kernel_page
from pipelines.exports.report.style import provider_colors
from pipelines.exports.report.sweeps import Series, Sweep, sweep_figure, wrap
from pipelines.exports.report.timeline import changes_timeline

INDEX = "index.html"
OVERVIEW_IMAGE = "img/overview.svg"
CHANGES_IMAGE = "img/changes.svg"
SUMMARY_TITLE = "Geometric-mean ratio to the baseline per provider and GPU (wins/losses below)"
PASS_ORDER = ("full", "forward", "backward", "no-grad-forward")
METRIC_ORDER = ("speed", "memory")


@dataclass(frozen=True)
class ReportSummary:
    folder: Path
    kernel_pages: dict[str, str]
    gpus: list[str]
    pages: int
    images: int

    @property
    def index(self) -> Path:
        return self.folder / INDEX

    @property
    def overview_image(self) -> Path:
        return self.folder / OVERVIEW_IMAGE


def write_site(data: ReportData, folder: Path, footer: str) -> ReportSummary:
    """Every page and picture of the report under `folder` (created)."""
    writer = _Writer(folder)
    kernel_names = html.Names(data.kernels)
    site = pages.Site({k: f"kernels/{kernel_names[k]}.html" for k in data.kernels}, footer)
    writer.text("style.css", html.STYLE)
    charted = _charted_points(data.points)
    providers = data.providers
    runs = data.runs.partition_by("kernel", as_dict=True, maintain_order=True)
    scorecards = data.scorecard.partition_by("kernel", as_dict=True, maintain_order=True)
    for kernel in data.kernels:
        kernel_runs = runs[(kernel,)]
        gpus = sorted(set(kernel_runs["gpu_name"].to_list()))
        image_dir = f"img/kernels/{kernel_names[kernel]}"
        sections = _kernel_sections(charted.get(kernel, {}), gpus, providers, image_dir, writer)
        writer.text(
            site.kernel_pages[kernel],
            kernel_page(
                site, kernel, kernel_runs["kernel_title"][0], sections, scorecards.get((kernel,), data.scorecard.clear()), kernel_runs
            ),
        )
    heatmaps = _heatmaps(data, writer)
    overview = writer.image(OVERVIEW_IMAGE, summary_heatmap(_summary_cells(data), SUMMARY_TITLE))
    changes = data.changes
    timeline = writer.image(
        CHANGES_IMAGE,
        changes_timeline(changes["observed_at"].to_list(), changes["ratio"].to_list(), changes["verdict"].to_list()),
    )
    counts = {
        "runs": data.runs.height,
        "snapshots": data.snapshots.height,
        "regressed": changes.filter(pl.col("verdict") == "regressed").height,
        "improved": changes.filter(pl.col("verdict") == "improved").height,
    }
    writer.text(INDEX, pages.overview(site, overview, _kernel_list(data), _gpu_list(data), heatmaps, counts))
    writer.text("changes.html", pages.changes_page(site, timeline, changes, data.unchanged))
    return ReportSummary(folder, site.kernel_pages, data.gpus, writer.pages, writer.images)


class _Writer:
    """Writes files into the site folder and counts the pages and pictures."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.pages = 0
        self.images = 0

    def _write(self, relative: str, data: bytes) -> None:
        path = self.folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def text(self, relative: str, content: str) -> None:
        self._write(relative, content.encode("utf-8"))
        self.pages += relative.endswith(".html")

    def image(self, relative: str, drawing: svg.Drawing) -> pages.Picture:
        self._write(relative, drawing.markup.encode("utf-8"))
        self.images += 1
        return pages.Picture(relative, (drawing.width, drawing.height))


def _order(value: str, known: tuple[str, ...]) -> tuple[int, str]:
    return (known.index(value) if value in known else len(known), value)


ChartKey = tuple[str, str, str]  # GPU, pass, metric


def _charted_points(points: pl.DataFrame) -> dict[str, dict[ChartKey, list[dict[str, Any]]]]:
    """The points of the sweep charts per kernel and chart, in the SQL's order."""
    charted: dict[str, dict[ChartKey, list[dict[str, Any]]]] = {}
    for row in points.iter_rows(named=True):
        chart = (row["gpu_name"], row["pass"], row["metric"])
        charted.setdefault(row["kernel"], {}).setdefault(chart, []).append(row)
    return charted


def _kernel_sections(
    charted: dict[ChartKey, list[dict[str, Any]]], gpus: list[str], providers: list[str], image_dir: str, writer: _Writer
) -> list[pages.GpuSection]:
    """Per GPU of the kernel, its charts (one per pass and metric), each drawn into `image_dir`."""
    # Colors per kernel, so its few providers get the clearly distinct ones, in the same order
    # everywhere (the most frequent providers first: liger, torch and huggingface keep theirs).
    present = {row["provider"] for rows in charted.values() for row in rows}
    colors = provider_colors([p for p in providers if p in present])
    names = html.Names(" ".join(key) for key in charted)
    sections = []
    for gpu in gpus:
        keys = sorted((key for key in charted if key[0] == gpu), key=lambda key: (_order(key[2], METRIC_ORDER), _order(key[1], PASS_ORDER)))
        section = pages.GpuSection(gpu)
        for key in keys:
            _, pass_, metric = key
            rows = charted[key]
            drawing = sweep_figure(_sweeps(rows), rows[0]["unit"], pages.metric_label(metric), colors)
            picture = writer.image(f"{image_dir}/{names[' '.join(key)]}.svg", drawing)
            section.charts.append(pages.Chart(pass_, metric, picture, rows))
        sections.append(section)
    return sections


def _sweeps(rows: list[dict[str, Any]]) -> list[Sweep]:
    """The points of one chart split into sweeps, and each sweep into one series per provider."""
    by_sweep: dict[tuple, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        sweep = by_sweep.setdefault((row["x_key"], row["sweep_digest"], row["sweep_workload"]), {})
        sweep.setdefault(row["provider"], []).append(row)
    sweeps = []
    for (_, _, workload), providers in by_sweep.items():
        first = next(iter(providers.values()))[0]
        series = [
            Series(
                provider=provider,
                x=[p["x_value"] for p in points],
                value=[p["value"] for p in points],
                p20=[p["p20"] for p in points],
                p80=[p["p80"] for p in points],
                ratio=[p["ratio"] for p in points],
            )
            for provider, points in providers.items()
        ]
        # Each part cut on its own, so a label of megabytes leaves room for the workload.
        title = wrap(f"{display.shorten(first['x_label'] or first['x_name'], 100)} · {_workload_text(workload)}")
        sweeps.append(Sweep(title=title, x_label=first["x_label"] or first["x_name"], series=series))
    return sweeps


def _workload_text(workload: str | None) -> str:
    """`{"batch":8,"seq":2048}` as `batch=8, seq=2048`: what stays fixed along the sweep."""
    if not workload:
        return "default workload"
    try:
        params = json.loads(workload)
    except ValueError:
        return workload
    if not isinstance(params, dict):
        return workload
    return ", ".join(f"{key}={value}" for key, value in params.items()) or "default workload"


def _weighted_geomean(frame: pl.DataFrame) -> float:
    weights = frame["n_groups"].to_list()
    logs = [math.log(g) for g in frame["geomean_ratio"].to_list()]
    return math.exp(sum(w * x for w, x in zip(weights, logs, strict=True)) / sum(weights))


def _heatmaps(data: ReportData, writer: _Writer) -> dict[str, list[pages.Heatmap]]:
    """Per GPU and metric, the scorecard heat map (drawn) and its totals per provider."""
    gpu_names = html.Names(data.gpus)
    heatmaps: dict[str, list[pages.Heatmap]] = {}
    scorecard = data.scorecard.filter(pl.col("geomean_ratio") > 0)
    for gpu in data.gpus:
        mine = scorecard.filter(pl.col("gpu_name") == gpu)
        for metric in sorted(mine["metric"].unique().to_list(), key=lambda m: _order(m, METRIC_ORDER)):
            rows = sorted(
                mine.filter(pl.col("metric") == metric).iter_rows(named=True),
                key=lambda r: (r["kernel"], _order(r["pass"], PASS_ORDER), r["baseline_provider"], r["provider"]),
            )
            cells = [
                HeatCell(
                    f"{r['kernel']} · {r['pass']} vs {r['baseline_provider']}", r["provider"], r["geomean_ratio"], r["wins"], r["losses"]
                )
                for r in rows
            ]
            title = f"{gpu} · {pages.metric_label(metric)}: geometric-mean ratio to the baseline, wins/losses"
            path = f"img/scorecard/{gpu_names[gpu]}-{html.Names([metric])[metric]}.svg"
            picture = writer.image(path, scorecard_heatmap(cells, title))
            totals = _totals(pl.DataFrame(rows, schema=scorecard.schema))
            heatmaps.setdefault(gpu, []).append(pages.Heatmap(metric, picture, totals))
    return heatmaps


def _totals(rows: pl.DataFrame) -> list[dict[str, Any]]:
    """Per provider and baseline: how many scorecard rows and groups, wins, losses and draws."""
    return [
        {
            "provider": provider,
            "baseline_provider": baseline,
            "rows": group.height,
            "n_groups": int(group["n_groups"].sum()),
            "wins": int(group["wins"].sum()),
            "losses": int(group["losses"].sum()),
            "draws": int(group["draws"].sum()),
            "geomean_ratio": _weighted_geomean(group),
        }
        for (provider, baseline), group in sorted(rows.group_by("provider", "baseline_provider"), key=lambda g: g[0])
    ]


def _summary_cells(data: ReportData) -> dict[str, list[HeatCell]]:
    scorecard = data.scorecard.filter(pl.col("geomean_ratio") > 0)
    panels: dict[str, list[HeatCell]] = {}
    for metric in sorted(scorecard["metric"].unique().to_list(), key=lambda m: _order(m, METRIC_ORDER)):
        # In the scorecard's order: the picture's bytes must not change from one build to the next.
        groups = scorecard.filter(pl.col("metric") == metric).group_by("gpu_name", "provider", maintain_order=True)
        panels[pages.metric_label(metric)] = [
            HeatCell(gpu, provider, _weighted_geomean(group), int(group["wins"].sum()), int(group["losses"].sum()))
            for (gpu, provider), group in groups
        ]
    return panels


def _kernel_list(data: ReportData) -> list[dict[str, Any]]:
    return (
        data.runs.group_by("kernel")
        .agg(
            pl.col("kernel_title").first(),
            pl.col("gpu_name").n_unique().alias("gpus"),
            pl.len().alias("runs"),
            pl.col("observed_at").max().alias("newest"),
        )
        .sort("kernel")
        .to_dicts()
    )


def _gpu_list(data: ReportData) -> list[dict[str, Any]]:
    environments = {row["gpu_name"]: row for row in data.environments.iter_rows(named=True)}
    kernels = data.runs.group_by("gpu_name").agg(pl.col("kernel").unique().sort())
    return [
        {
            "gpu_name": gpu,
            "title": environments.get(gpu, {}).get("title"),
            "architecture": environments.get(gpu, {}).get("architecture"),
            "kernels": kernel_list,
        }
        for gpu, kernel_list in sorted(kernels.iter_rows())
    ]
