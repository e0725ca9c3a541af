"""The report's pages as HTML text: the overview (a kernel's page: `kernel_pages`; the changes page: `changes_page`),
and what every page shares: where pages live, their pictures, the metric labels.

Pages link to each other by relative paths only, so the site opens from disk;
every number in a table carries its provenance (run id, snapshot, commit) or
links to the run that does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pipelines.exports.report import html
from pipelines.exports.report.html import link, text
from pipelines.exports.report.staleness import STALE_DAYS, Newest

TITLE = "Liger benchmark report"
METRIC_LABELS = {"speed": "latency", "memory": "peak memory"}
PASS_ORDER = ("full", "forward", "backward", "no-grad-forward")
METRIC_ORDER = ("speed", "memory")


def order(value: str, known: tuple[str, ...]) -> tuple[int, str]:
    """Where a pass or metric sorts: the known ones in their order, then the others by name."""
    return (known.index(value) if value in known else len(known), value)


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


def freshness(newest: Newest) -> str:
    """A kernel's newest run in one stream, flagged when stale."""
    day = newest.newest.strftime("%Y-%m-%d")
    if not newest.stale:
        return f"{text(newest.stream_name)}: {text(day)}"
    return f'{text(newest.stream_name)}: {text(day)} <strong class="stale" title="{text(newest.sentence())}">stale</strong>'


def freshness_sentence(newest: Newest) -> str:
    """A kernel's newest run in one stream, and when stale how far behind the stream it is."""
    day = newest.newest.strftime("%Y-%m-%d")
    sentence = f"{text(newest.stream_name)}: newest run {text(day)}"
    if newest.stale:
        end = newest.stream_newest.strftime("%Y-%m-%d")
        sentence += f', <strong class="stale">stale</strong>: {newest.days_behind} days before that stream\'s newest run ({text(end)})'
    return sentence


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
    opening: str = "",
) -> str:
    """index.html: what changed in the newest run (`opening`, changes_page.newest_section), the summary picture,
    then per GPU and metric the scorecard heat map with wins and losses."""
    parts = [
        f"<h1>{text(TITLE)}</h1>",
        opening,
        f"<p>{counts['runs']} runs of {len(kernels)} kernels on {len(gpus)} GPUs, from {counts['snapshots']} "
        "snapshots of the upstream benchmark files and upstream's CI history. "
        + (
            link("changes.html", f"{html.count(counts['regressed'], 'regression')} and {html.count(counts['improved'], 'improvement')}")
            + " found as change points in the series over the benchmarked commits.</p>"
            if counts["change_points"]
            else "This warehouse has no change points computed yet (" + link("changes.html", "change points") + ").</p>"
        ),
        "<p>Each cell: the geometric mean, over the comparable groups (one workload, pass and metric on one GPU), "
        "of the implementation's ratio to the group's baseline (baseline value / value: above 1 is faster or smaller), "
        "then wins/losses: groups where the p20-p80 intervals do not overlap. Blue is better than the baseline, "
        "red worse; grey: no comparison. The tables below name each baseline.</p>",
        html.image(summary.src, "Geometric-mean ratio to the baseline per GPU and provider", summary.size),
        "<h2>Kernels</h2>",
        f"<p>Newest run of each kernel per stream; <strong>stale</strong>: more than {STALE_DAYS} days before "
        "that stream's newest run (upstream stopped benchmarking it there).</p>",
        html.table(
            ["kernel", "name", "GPUs", "runs", "newest run"],
            (
                [
                    link(site.kernel_pages[k["kernel"]], k["kernel_title"]),
                    html.code(k["kernel"]),
                    text(k["gpus"]),
                    text(k["runs"]),
                    "<br>".join(freshness(n) for n in k["newest"]),
                ]
                for k in kernels
            ),
            numeric=["GPUs", "runs"],
            row_attrs=(' class="stale"' if k["newest"] and all(n.stale for n in k["newest"]) else "" for k in kernels),
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
                        text(t["baseline"]),
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
    # One line per GPU until opened (a link to #gpu opens it): the heat maps made the page 23,000 px tall.
    return f"<h2>{text(name)}</h2>" + html.fold(f"{gpu['title']}: the scorecard of each metric", "\n".join(parts), anchor=gpu_anchor(name))
