"""The report's pages as HTML text: the overview and the changes page (a kernel's page: `kernel_pages`),
and what every page shares: where pages live, their pictures, the metric labels.

Pages link to each other by relative paths only, so the site opens from disk;
every number in a table carries its provenance (run id, snapshot, commit) or
links to the run that does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from pipelines.exports.report import html
from pipelines.exports.report.html import link, text

TITLE = "Liger benchmark report"
METRIC_LABELS = {"speed": "latency", "memory": "peak memory"}


@dataclass(frozen=True)
class Picture:
    """An image written into the site: its path from the site's root and its pixel size."""

    src: str
    size: tuple[int, int]


@dataclass(frozen=True)
class Chart:
    pass_: str
    metric: str
    picture: Picture
    points: list[dict[str, Any]]


@dataclass
class GpuSection:
    gpu: str
    charts: list[Chart] = field(default_factory=list)


@dataclass(frozen=True)
class Heatmap:
    metric: str
    picture: Picture
    totals: list[dict[str, Any]]  # per (provider, baseline): rows, groups, wins, losses, draws, geomean


@dataclass(frozen=True)
class Site:
    """Where each page lives and what the footer says about the data's origin."""

    kernel_pages: dict[str, str]  # kernel -> path from the root, e.g. kernels/rms_norm.html
    footer: str

    def run_href(self, kernel: str, run_id: str) -> str:
        """The run's row on its kernel's page, from a page at the site's root."""
        return f"{self.kernel_pages[kernel]}#{html.anchor_id('run', run_id)}"


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def gpu_anchor(gpu: str) -> str:
    return html.anchor_id("gpu", gpu)


def overview(
    site: Site,
    summary: Picture,
    kernels: Sequence[dict[str, Any]],
    gpus: Sequence[dict[str, Any]],
    heatmaps: dict[str, list[Heatmap]],
    counts: dict[str, int],
) -> str:
    """index.html: the summary picture, then per GPU and metric the scorecard heat map with wins and losses."""
    parts = [
        f"<h1>{text(TITLE)}</h1>",
        f"<p>{counts['runs']} runs of {len(kernels)} kernels on {len(gpus)} GPUs, from {counts['snapshots']} "
        "snapshots of the upstream benchmark files. "
        + link("changes.html", f"{counts['regressed']} regressions and {counts['improved']} improvements")
        + " between versions.</p>",
        "<p>Each cell: the geometric mean, over the comparable groups (one workload, pass and metric on one GPU), "
        "of the provider's ratio to the group's baseline (baseline value / value: above 1 is faster or smaller), "
        "then wins/losses: groups where the p20-p80 intervals do not overlap. Blue is better than the baseline, "
        "red worse; grey: no comparison.</p>",
        html.image(summary.src, "Geometric-mean ratio to the baseline per GPU and provider", summary.size),
        "<h2>Kernels</h2>",
        html.table(
            ["kernel", "name", "GPUs", "runs", "newest run"],
            (
                [
                    link(site.kernel_pages[k["kernel"]], k["kernel_title"]),
                    html.code(k["kernel"]),
                    text(k["gpus"]),
                    text(k["runs"]),
                    text(k["newest"]),
                ]
                for k in kernels
            ),
            numeric=["GPUs", "runs"],
        ),
        "<h2>GPUs</h2>",
        "<ul>" + "".join(f"<li>{link('#' + gpu_anchor(g['gpu_name']), g['gpu_name'])}</li>" for g in gpus) + "</ul>",
    ]
    for gpu in gpus:
        parts.append(_overview_gpu(site, gpu, heatmaps.get(gpu["gpu_name"], [])))
    return html.page(TITLE, "\n".join(parts), site.footer)


def _overview_gpu(site: Site, gpu: dict[str, Any], heatmaps: list[Heatmap]) -> str:
    name = gpu["gpu_name"]
    parts = [
        f'<section id="{gpu_anchor(name)}">',
        f"<h2>{text(name)}</h2>",
        f'<p class="muted">{text(gpu["title"])} · architecture {text(gpu["architecture"])} · '
        f"kernels measured: " + ", ".join(link(f"{site.kernel_pages[k]}#{gpu_anchor(name)}", k) for k in gpu["kernels"]) + "</p>",
    ]
    if not heatmaps:
        parts.append("<p>No provider has a baseline to compare with on this GPU.</p>")
    for heatmap in heatmaps:
        parts.append(f"<h3>{text(metric_label(heatmap.metric))}</h3>")
        alt = f"Scorecard of {name}, {metric_label(heatmap.metric)}"
        parts.append(html.image(heatmap.picture.src, alt, heatmap.picture.size, lazy=True))
        parts.append(
            html.table(
                ["provider", "baseline", "rows", "groups", "wins", "losses", "draws", "geomean ratio"],
                (
                    [
                        text(t["provider"]),
                        text(t["baseline_provider"]),
                        text(t["rows"]),
                        text(t["n_groups"]),
                        text(t["wins"]),
                        text(t["losses"]),
                        text(t["draws"]),
                        text(t["geomean_ratio"]),
                    ]
                    for t in heatmap.totals
                ),
                numeric=["rows", "groups", "wins", "losses", "draws", "geomean ratio"],
            )
        )
    parts.append("</section>")
    return "\n".join(parts)


def changes_page(site: Site, timeline: Picture, changes: pl.DataFrame, unchanged: int) -> str:
    """Every regression and improvement between two runs of one provider in one group, newest first."""
    verdicts = changes["verdict"].value_counts(sort=True).iter_rows() if changes.height else []
    summary = ", ".join(f"{n} {verdict}" for verdict, n in verdicts) or "none"
    parts = [
        "<h1>Regressions and improvements</h1>",
        f"<p>Each provider's run against its previous run in the same comparable group: {text(summary)}; "
        f"{unchanged} more changes stayed inside the noise (p20-p80 intervals overlapping) and are left out. "
        "Ratio: previous value / new value (above 1: the newer run is better). "
        "The run links lead to each run's row, with its snapshots and commits, on its kernel's page.</p>",
        html.image(timeline.src, "Regressions and improvements over time", timeline.size),
    ]
    records = list(changes.iter_rows(named=True))
    rows = (
        [
            text(c["observed_at"]),
            text(c["verdict"]),
            link(site.kernel_pages[c["kernel"]], c["kernel"]),
            text(c["gpu_name"]),
            text(c["pass"]),
            text(c["metric"]),
            text(c["workload_slug"]),
            text(c["provider"]),
            f"{text(c['previous_liger_version'])} → {text(c['liger_version'])}",
            text(c["previous_value"]),
            text(c["value"]),
            text(c["unit"]),
            text(c["ratio"]),
            link(site.run_href(c["kernel"], c["previous_run_id"]), "previous", c["previous_run_id"])
            + " "
            + html.commit(c["previous_commit"]),
            link(site.run_href(c["kernel"], c["run_id"]), "new", c["run_id"]) + " " + html.commit(c["commit"]),
        ]
        for c in records
    )
    headers = [
        "observed at",
        "verdict",
        "kernel",
        "GPU",
        "pass",
        "metric",
        "workload",
        "provider",
        "liger version",
        "previous",
        "new",
        "unit",
        "ratio",
        "previous run",
        "new run",
    ]
    verdicts = (f' class="{html.text(c["verdict"])}"' for c in records)
    parts.append(html.table(headers, rows, numeric=["previous", "new", "ratio"], row_attrs=verdicts))
    return html.page(f"Regressions and improvements · {TITLE}", "\n".join(parts), site.footer)
