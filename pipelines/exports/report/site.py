"""The report's site: every page and picture of it written into one folder, from `ReportData`.

What goes where: the overview (`index.html`) with the summary and scorecard heat maps, a page per
kernel with its history over the benchmarked commits (change points marked), its sweep charts and
runs, the changes page (change points by commit) with its timeline. `build` decides when and
where the site is written and swaps it into place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.core import display
from pipelines.exports.report import changes_page, html, implementations, pages, scorecards, svg
from pipelines.exports.report.data import ReportData
from pipelines.exports.report.heatmaps import summary_heatmap
from pipelines.exports.report.history_site import kernel_histories
from pipelines.exports.report.kernel_pages import KernelView, kernel_page
from pipelines.exports.report.newest import newest_changes
from pipelines.exports.report.pages import METRIC_ORDER, PASS_ORDER, order
from pipelines.exports.report.staleness import newest_per_kernel
from pipelines.exports.report.sweeps import Series, Sweep, sweep_figure, wrap
from pipelines.exports.report.timeline import changes_timeline

INDEX = "index.html"
OVERVIEW_IMAGE = "img/overview.svg"
CHANGES_IMAGE = "img/changes.svg"
SUMMARY_TITLE = "Geometric-mean ratio to the baseline per implementation and GPU (wins/losses below)"


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
    ordered = [implementations.label(p, b) for p, b in data.implementations]
    newest = newest_per_kernel(data.runs)
    runs = data.runs.partition_by("kernel", as_dict=True, maintain_order=True)
    series = data.series.partition_by("kernel", as_dict=True, maintain_order=True)
    change_points = data.change_points.partition_by("kernel", as_dict=True, maintain_order=True)
    scorecard = data.scorecard.partition_by("kernel", as_dict=True, maintain_order=True)
    latest = newest_changes(data.series, data.noise, data.change_points, changes_page.commit_label)
    for kernel in data.kernels:
        kernel_runs = runs[(kernel,)]
        kernel_series = series.get((kernel,), data.series.clear())
        kernel_changes = change_points.get((kernel,), data.change_points.clear())
        present = {implementations.label(p, b) for p, b in kernel_series.select("provider", "backend").unique().iter_rows()}
        present |= {implementations.label(p, b) for p, b in kernel_runs.select("provider", "backend").unique().iter_rows()}
        # Colors per kernel, so its few families get the clearly distinct ones, in the same order everywhere.
        styles = implementations.styles([name for name in ordered if name in present])
        image_dir = f"img/kernels/{kernel_names[kernel]}"
        gpus = sorted(set(kernel_runs["gpu_name"].to_list()))
        chart_keys = [" ".join(key) for key in kernel_series.select("gpu_name", "pass", "metric").unique().iter_rows()]
        history_names = html.Names([*("history " + k for k in chart_keys), *("workloads " + k for k in chart_keys)])

        def draw_history(key, drawing, image_dir=image_dir, names=history_names):
            # The other workloads' picture is named apart: `history-*` are the charts themselves.
            kind, chart = ("workloads", key[:3]) if len(key) == 4 else ("history", key)
            return writer.image(f"{image_dir}/{names[kind + ' ' + ' '.join(chart)]}.svg", drawing)

        kernel_commits = changes_page.by_commit(changes_page.drawn(kernel_changes))
        view = KernelView(
            kernel=kernel,
            title=kernel_runs["kernel_title"][0],
            sections=_kernel_sections(charted.get(kernel, {}), gpus, styles, image_dir, writer),
            histories=kernel_histories(kernel_series, kernel_changes, styles, draw_history),
            change_points=[row for c in kernel_commits for row in c.rows],
            newest_change=kernel_commits[0] if kernel_commits else None,
            latest=latest,
            smaller_changes=[row for c in changes_page.by_commit(changes_page.small(kernel_changes)) for row in c.rows],
            has_change_points=data.has_change_points,
            newest=newest.get(kernel, []),
            scorecard=scorecard.get((kernel,), data.scorecard.clear()),
            runs=_page_runs(kernel_runs, charted.get(kernel, {}), kernel_changes),
            total_runs=kernel_runs.height,
        )
        writer.text(site.kernel_pages[kernel], kernel_page(site, view))
    heatmaps = scorecards.heatmaps(data.scorecard, data.gpus, writer.image)
    overview = writer.image(OVERVIEW_IMAGE, summary_heatmap(scorecards.summary_cells(data.scorecard), SUMMARY_TITLE))
    changes = changes_page.drawn(data.change_points)
    timeline = writer.image(
        CHANGES_IMAGE,
        changes_timeline(
            changes["observed_at"].to_list(), changes["ratio"].to_list(), changes["verdict"].to_list(), changes["status"].to_list()
        ),
    )
    counts = {
        "runs": data.runs.height,
        "snapshots": data.snapshots.height,
        "regressed": changes.filter(pl.col("verdict") == "regressed").height,
        "improved": changes.filter(pl.col("verdict") == "improved").height,
        "change_points": data.has_change_points,
    }
    opening = changes_page.newest_section(site, latest)
    writer.text(INDEX, pages.overview(site, overview, _kernel_list(data, newest), _gpu_list(data), heatmaps, counts, opening))
    commits = changes_page.by_commit(changes)
    smaller = [row for c in changes_page.by_commit(changes_page.small(data.change_points)) for row in c.rows]
    writer.text(changes_page.CHANGES, changes_page.changes_page(site, timeline, commits, data.has_change_points, latest, smaller))
    return ReportSummary(folder, site.kernel_pages, data.gpus, writer.pages, writer.images)


def _page_runs(runs: pl.DataFrame, charted: dict, change_points: pl.DataFrame) -> pl.DataFrame:
    """The runs a kernel's page lists: every run of the data files, and each CI run a number on the page
    comes from (a charted latest point, a change point's runs); the CI history's other runs are its
    history charts' points, tens of thousands of rows no one reads as a table."""
    shown = {row["run_id"] for rows in charted.values() for row in rows}
    shown |= set(change_points["before_run_id"].to_list()) | set(change_points["after_run_id"].to_list())
    return runs.filter((pl.col("stream") != "ci") | pl.col("run_id").is_in(list(shown)))


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


ChartKey = tuple[str, str, str]  # GPU, pass, metric


def _charted_points(points: pl.DataFrame) -> dict[str, dict[ChartKey, list[dict[str, Any]]]]:
    """The points of the sweep charts per kernel and chart, in the SQL's order."""
    charted: dict[str, dict[ChartKey, list[dict[str, Any]]]] = {}
    for row in points.iter_rows(named=True):
        chart = (row["gpu_name"], row["pass"], row["metric"])
        charted.setdefault(row["kernel"], {}).setdefault(chart, []).append(row)
    return charted


def _kernel_sections(
    charted: dict[ChartKey, list[dict[str, Any]]], gpus: list[str], styles: dict, image_dir: str, writer: _Writer
) -> list[pages.GpuSection]:
    """Per GPU of the kernel, its charts (one per pass and metric), each drawn into `image_dir`."""
    names = html.Names(" ".join(key) for key in charted)
    sections = []
    for gpu in gpus:
        keys = sorted((key for key in charted if key[0] == gpu), key=lambda key: (order(key[2], METRIC_ORDER), order(key[1], PASS_ORDER)))
        section = pages.GpuSection(gpu)
        for key in keys:
            _, pass_, metric = key
            rows = charted[key]
            drawing = sweep_figure(
                _sweeps(rows), rows[0]["unit"], pages.metric_label(metric), styles, _baselines_note(rows), from_zero=metric == "memory"
            )
            picture = writer.image(f"{image_dir}/{names[' '.join(key)]}.svg", drawing)
            section.charts.append(pages.Chart(pass_, metric, picture, rows))
        sections.append(section)
    return sections


def _baselines_note(rows: list[dict[str, Any]]) -> str:
    """What the chart's ratios are taken against: each baseline implementation it has."""
    named = sorted({implementations.label(r["baseline_provider"], r["baseline_backend"]) for r in rows if r["baseline_provider"]})
    if not named:
        return "no baseline in these groups: no ratios"
    return display.shorten("ratio = baseline / value, baseline: " + ", ".join(named), 150)


def _sweeps(rows: list[dict[str, Any]]) -> list[Sweep]:
    """The points of one chart split into sweeps, and each sweep into one series per implementation."""
    by_sweep: dict[tuple, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        sweep = by_sweep.setdefault((row["x_key"], row["sweep_digest"], row["sweep_workload"]), {})
        sweep.setdefault(implementations.label(row["provider"], row["backend"]), []).append(row)
    sweeps = []
    for (_, _, workload), members in by_sweep.items():
        first = next(iter(members.values()))[0]
        series = [
            Series(
                provider=name,
                x=[p["x_value"] for p in points],
                value=[p["value"] for p in points],
                p20=[p["p20"] for p in points],
                p80=[p["p80"] for p in points],
                ratio=[p["ratio"] for p in points],
            )
            for name, points in members.items()
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


def _kernel_list(data: ReportData, newest: dict) -> list[dict[str, Any]]:
    kernels = (
        data.runs.group_by("kernel")
        .agg(pl.col("kernel_title").first(), pl.col("gpu_name").n_unique().alias("gpus"), pl.len().alias("runs"))
        .sort("kernel")
        .to_dicts()
    )
    return [{**k, "newest": newest.get(k["kernel"], [])} for k in kernels]


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
