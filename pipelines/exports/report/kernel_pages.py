"""A kernel's page of the report: per GPU, pass and metric its sweep chart with the numbers behind it,
then its scorecard and every run, each run an anchor the other pages link to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from pipelines.exports.report import html
from pipelines.exports.report.html import link, text
from pipelines.exports.report.pages import TITLE, GpuSection, Site, gpu_anchor, metric_label


def kernel_page(
    site: Site,
    kernel: str,
    title: str,
    sections: Sequence[GpuSection],
    scorecard: pl.DataFrame,
    runs: pl.DataFrame,
) -> str:
    """One kernel: per GPU, pass and metric its sweep chart and the numbers behind it; then every run."""
    root = "../"
    parts = [
        f"<h1>{text(title)} <code>{text(kernel)}</code></h1>",
        f"<p>{runs.height} runs on {len(sections)} GPUs. GPUs: "
        + ", ".join(f'<a href="#{gpu_anchor(s.gpu)}">{text(s.gpu)}</a>' for s in sections)
        + ' · <a href="#runs">all runs</a></p>',
        "<p>Each chart draws, for every sweep (the runs that differ only in the x value), each provider's "
        "latest median with its p20-p80 band, and below it the ratio to the group's baseline "
        "(baseline value / value: above the dashed line is better).</p>",
        "<h2>Scorecard</h2>",
        _scorecard_table(scorecard) if scorecard.height else "<p>No provider has a baseline to compare with.</p>",
    ]
    for section in sections:
        parts.append(f'<section id="{gpu_anchor(section.gpu)}">')
        parts.append(f"<h2>{text(section.gpu)}</h2>")
        if not section.charts:
            parts.append("<p>No passed run on this GPU: see the failed runs below.</p>")
        parts.append('<div class="charts">')
        for chart in section.charts:
            label = f"{chart.pass_} · {metric_label(chart.metric)}"
            chart_id = html.anchor_id("chart", "\0".join([section.gpu, chart.pass_, chart.metric]))
            alt = f"{title}, {section.gpu}, {label}"
            parts.append(
                f'<figure id="{chart_id}"><h3>{text(label)}</h3>'
                + html.image(root + chart.picture.src, alt, chart.picture.size, lazy=True)
                + f"<details><summary>The {len(chart.points)} numbers in this chart and where they come from</summary>"
                + _points_table(chart.points)
                + "</details></figure>"
            )
        parts.append("</div></section>")
    parts.append('<h2 id="runs">All runs</h2>')
    parts.append(
        "<p>Every run of the kernel, newest first per GPU, pass, metric and provider; "
        "first and last seen: the snapshots (upstream commit and file) whose file held the run.</p>"
    )
    parts.append(_runs_table(runs))
    return html.page(f"{title} · {TITLE}", "\n".join(parts), site.footer, root)


def _scorecard_table(scorecard: pl.DataFrame) -> str:
    headers = ["GPU", "pass", "metric", "provider", "baseline", "groups", "geomean ratio", "min", "max", "wins", "losses", "draws"]
    columns = [
        "gpu_name",
        "pass",
        "metric",
        "provider",
        "baseline_provider",
        "n_groups",
        "geomean_ratio",
        "min_ratio",
        "max_ratio",
        "wins",
        "losses",
        "draws",
    ]
    rows = ([text(row[c]) for c in columns] for row in scorecard.iter_rows(named=True))
    return html.table(headers, rows, numeric=headers[5:])


def _points_table(points: list[dict[str, Any]]) -> str:
    """The chart's points; each run links to its row in the page's table of runs."""
    headers = [
        "sweep",
        "x",
        "provider",
        "median",
        "p20",
        "p80",
        "unit",
        "ratio",
        "baseline",
        "noise",
        "liger version",
        "run",
        "first seen in snapshot",
        "commit",
    ]
    rows = (
        [
            text(p["sweep_workload"]),
            text(p["x_value"]),
            text(p["provider"]),
            text(p["value"]),
            text(p["p20"]),
            text(p["p80"]),
            text(p["unit"]),
            text(p["ratio"]),
            text(p["baseline_provider"]),
            text(p["noise"]),
            text(p["liger_version"]),
            link(f"#{html.anchor_id('run', p['run_id'])}", p["run_id"]),
            text(p["first_seen_snapshot"]),
            html.commit(p["first_seen_commit"]),
        ]
        for p in points
    )
    return html.table(headers, rows, numeric=["median", "p20", "p80", "ratio"])


def _runs_table(runs: pl.DataFrame) -> str:
    headers = [
        "run",
        "GPU",
        "pass",
        "metric",
        "provider",
        "x",
        "status",
        "median",
        "p20",
        "p80",
        "unit",
        "liger version",
        "observed at",
        "first seen in",
        "commit",
        "last seen in",
        "commit ",
        "at head",
    ]
    records = list(runs.iter_rows(named=True))
    rows = (
        [
            f'<code id="{html.anchor_id("run", r["run_id"])}">{text(r["run_id"])}</code>',
            text(r["gpu_name"]),
            text(r["pass"]),
            text(r["metric"]),
            text(r["provider"]),
            text(r["x_value"]),
            text(r["status"]),
            text(r["value"]),
            text(r["p20"]),
            text(r["p80"]),
            text(r["unit"]),
            text(r["liger_version"]),
            text(r["observed_at"]),
            text(r["first_seen_snapshot"]),
            html.commit(r["first_seen_commit"]) + (f" {text(r['first_seen_subject'])}" if r["first_seen_subject"] else ""),
            text(r["last_seen_snapshot"]),
            html.commit(r["last_seen_commit"]),
            text(r["in_latest"]),
        ]
        for r in records
    )
    attrs = (' class="failed"' if r["status"] != "passed" else "" for r in records)
    return html.table(headers, rows, numeric=["median", "p20", "p80"], row_attrs=attrs)
