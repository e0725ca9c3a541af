"""A kernel's page of the report: how fresh its data is, its history over upstream's benchmarked
commits with the change points marked and listed, its scorecard, per GPU, pass and metric its sweep
chart with the numbers behind it, then the runs those numbers come from, each an anchor the other
pages link to."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from pipelines.core import effect
from pipelines.exports.report import changes_page, html, implementations, scorecards
from pipelines.exports.report.history_site import MIN_COMMITS, HistoryChart
from pipelines.exports.report.html import text
from pipelines.exports.report.newest import Newest as NewestRun
from pipelines.exports.report.pages import TITLE, GpuSection, Site, freshness_sentence, gpu_anchor, metric_label
from pipelines.exports.report.staleness import Newest

ROOT = "../"


@dataclass(frozen=True)
class KernelView:
    """Everything one kernel's page shows."""

    kernel: str
    title: str
    sections: Sequence[GpuSection]  # the sweep charts per GPU
    histories: dict[str, list[HistoryChart]]  # per GPU, the charts over the benchmarked commits
    change_points: list[dict[str, Any]]  # newest commit first, regressions first (at least the minimum effect)
    has_change_points: bool
    newest: list[Newest]
    scorecard: pl.DataFrame
    runs: pl.DataFrame  # the runs the page lists
    total_runs: int
    smaller_changes: list[dict[str, Any]] = field(default_factory=list)  # below the minimum effect: folded
    newest_change: changes_page.CommitChanges | None = None  # the commit of the newest change points
    latest: NewestRun | None = None  # what changed in the newest run, every kernel's lines (this page shows its own)


def kernel_page(site: Site, view: KernelView) -> str:
    """One kernel. Its first screen says what matters: freshness, what changed in the newest run and how many
    change points; the long parts (history and sweep charts per GPU, the change table, scorecard, runs) are
    folded below it, one line each, so the page opens a few screens tall (issue 31)."""
    title, runs = view.title, view.runs
    stale = [n for n in view.newest if n.stale]
    parts = [
        f"<h1>{text(title)} <code>{text(view.kernel)}</code></h1>",
        f"<p>{view.total_runs} runs on {len(view.sections)} GPUs. GPUs: "
        + ", ".join(f'<a href="#{gpu_anchor(s.gpu)}">{text(s.gpu)}</a>' for s in view.sections)
        + ' · <a href="#history">history</a> · <a href="#change-points">change points</a> · <a href="#runs">runs</a></p>',
        f'<p class="{"note" if stale else "muted"}">Newest data: ' + "; ".join(freshness_sentence(n) for n in view.newest) + ".</p>",
        changes_page.newest_for_kernel(site, view.latest, view.kernel) if view.latest is not None else "",
        '<h2 id="change-points">Change points</h2>',
        _change_points(view),
        '<h2 id="history">History over the benchmarked commits</h2>',
        _histories(view),
        '<h2 id="scorecard">Scorecard</h2>',
        html.fold(
            f"{html.count(view.scorecard.height, 'row')}: per GPU, pass, metric and implementation, its geometric-mean "
            "ratio to the baseline and its wins and losses",
            _scorecard_table(view.scorecard),
        )
        if view.scorecard.height
        else "<p>No provider has a baseline to compare with.</p>",
        '<h2 id="sweeps">Latest runs along each sweep</h2>',
        "<p>Each chart draws, for every sweep (the runs that differ only in the x value), each implementation's "
        "latest median with its p20-p80 band, and below it the ratio to the group's baseline, named above the chart "
        "(baseline value / value: above the dashed line is better). One GPU per line below.</p>",
    ]
    newest_on = dict(runs.group_by("gpu_name").agg(pl.col("observed_at").max()).iter_rows()) if runs.height else {}
    for section in view.sections:
        inner = []
        if section.gpu in newest_on:
            inner.append(f'<p class="muted">Newest run of this kernel on this GPU: {text(newest_on[section.gpu])}.</p>')
        if not section.charts:
            inner.append("<p>No passed run on this GPU: see the failed runs below.</p>")
        inner.append('<div class="charts">')
        for chart in section.charts:
            label = f"{chart.pass_} · {metric_label(chart.metric)}"
            chart_id = html.anchor_id("chart", "\0".join([section.gpu, chart.pass_, chart.metric]))
            alt = f"{title}, {section.gpu}, {label}"
            inner.append(
                f'<figure id="{chart_id}"><h4>{text(label)}</h4>'
                + html.image(ROOT + chart.picture.src, alt, chart.picture.size, lazy=True)
                + f"<details><summary>The {len(chart.points)} numbers in this chart and where they come from</summary>"
                + _points_table(chart.points)
                + "</details></figure>"
            )
        inner.append("</div>")
        charts = ", ".join(dict.fromkeys(f"{c.pass_} · {metric_label(c.metric)}" for c in section.charts)) or "no passed run"
        parts.append(
            f'<section id="{gpu_anchor(section.gpu)}">'
            + html.fold(f"<strong>{text(section.gpu)}</strong>: {text(charts)}", "\n".join(inner), summary_html=True)
            + "</section>"
        )
    parts.append('<h2 id="runs">Runs</h2>')
    parts.append(
        f"<p>{runs.height} of the kernel's {view.total_runs} runs: every run of upstream's data files, and each run of its CI "
        "history that a number on this page comes from (the others are the history charts' points). Newest first per GPU, "
        "pass, metric and implementation; first and last seen: the snapshots (upstream commit and file) whose file held the run.</p>"
    )
    parts.append(html.fold(f"The {html.count(runs.height, 'run')}", _runs_table(runs)))
    return html.page(f"{title} · {TITLE}", "\n".join(parts), site.footer, ROOT)


def history_anchor(chart: HistoryChart) -> str:
    return html.anchor_id("history", "\0".join([chart.gpu, chart.pass_, chart.metric]))


def _histories(view: KernelView) -> str:
    if not view.histories:
        return (
            f"<p>Upstream's CI did not benchmark this kernel at {MIN_COMMITS} commits or more on any GPU: "
            "there is no series to draw (the sweep charts below show its latest runs).</p>"
        )
    parts = [
        "<p>Each series over the commits upstream's CI benchmarked (oldest left), one line per implementation "
        "(provider · backend, variants of one provider in shades of one color), one panel per workload. "
        "Change points: a vertical line between the last commit before the shift and the first after it, "
        "red for a regression, blue for an improvement, dashed when the cause is the host; its ratio "
        "(before / after) at the top.</p>"
    ]
    for gpu, charts in view.histories.items():
        figures = ['<div class="charts">']
        for chart in charts:
            label = f"{chart.pass_} · {metric_label(chart.metric)}"
            alt = f"{view.title}, {gpu}, {label}, over {chart.commits} benchmarked commits"
            caption = (
                f"{len(chart.workloads_shown)} of {chart.workloads} workloads, {chart.marked} change points marked"
                if chart.workloads > len(chart.workloads_shown)
                else f"{chart.workloads} workloads, {chart.marked} change points marked"
            )
            rest = (
                f"<details><summary>The other {chart.workloads - len(chart.workloads_shown)} workloads</summary>"
                + html.image(ROOT + chart.rest.src, f"{alt}, the other workloads", chart.rest.size, lazy=True)
                + "</details>"
                if chart.rest is not None
                else ""
            )
            figures.append(
                f'<figure id="{history_anchor(chart)}"><h4>{text(label)}</h4>'
                + html.image(ROOT + chart.picture.src, alt, chart.picture.size, lazy=True)
                + f'<figcaption class="muted">{text(caption)}</figcaption>{rest}</figure>'
            )
        figures.append("</div>")
        marked = sum(c.marked for c in charts)
        labels = ", ".join(f"{c.pass_} · {metric_label(c.metric)}" for c in charts)
        summary = f"<strong>{text(gpu)}</strong>: {text(labels)}; {html.count(marked, 'change point')} marked"
        parts.append(html.fold(summary, "\n".join(figures), summary_html=True))
    return "\n".join(parts)


def _change_points(view: KernelView) -> str:
    """How many change points and the newest of them in a line; their table folded below it."""
    if not view.has_change_points:
        return f'<p class="note">{text(changes_page.ABSENT)}</p>'
    smaller = (
        html.fold(
            f"{html.count(len(view.smaller_changes), 'step')} smaller than {effect.MIN_EFFECT:.0%}, not counted as changes",
            changes_page.change_table(view.smaller_changes, run_href, None),
        )
        if view.smaller_changes
        else ""
    )
    if not view.change_points:
        return "<p>No change point in any series of this kernel.</p>" + smaller
    regressed = sum(r["verdict"] == "regressed" for r in view.change_points)
    newest = view.newest_change
    at = (
        f"the newest at {text(newest.label)} ({text(newest.first_observed)}): "
        f"{html.count(newest.count('regressed'), 'regression')}, {html.count(newest.count('improved'), 'improvement')}. "
        if newest is not None
        else ""
    )
    return (
        f"<p><strong>{html.count(len(view.change_points), 'change point')}, {regressed} of them regressions</strong>; "
        + at
        + "The table lists them newest commit first, regressions first within a commit.</p>"
        + html.fold(
            f"The {html.count(len(view.change_points), 'change point')}",
            f'<p class="muted">{text(changes_page.EXPLAINED)}</p>' + changes_page.change_table(view.change_points, run_href, None),
        )
        + smaller
    )


def run_href(_kernel: str, run_id: str) -> str:
    """A run's row on this very page."""
    return f"#{html.anchor_id('run', run_id)}"


def _scorecard_table(scorecard: pl.DataFrame) -> str:
    headers = ["GPU", "pass", "metric", "implementation", "baseline", "groups", "geomean ratio", "min", "max", "wins", "losses", "draws"]
    columns = ["n_groups", "geomean_ratio", "min_ratio", "max_ratio", "wins", "losses", "draws"]
    rows = (
        [
            text(row["gpu_name"]),
            text(row["pass"]),
            text(row["metric"]),
            text(scorecards.implementation(row)),
            text(scorecards.baseline(row)),
        ]
        + [text(row[c]) for c in columns]
        for row in scorecard.iter_rows(named=True)
    )
    return html.table(headers, rows, numeric=headers[5:])


def _spread(row: dict[str, Any]) -> str:
    """The median, its p20-p80 band and unit in one cell (three columns were one more reason for tables wider than the page)."""
    if row["value"] is None:
        return text(None)
    band = f' <span class="muted nowrap">[{text(row["p20"])}, {text(row["p80"])}]</span>' if row["p20"] is not None else ""
    return f'<span class="nowrap">{text(row["value"])} {text(row["unit"])}</span>{band}'


# Two cells of every run's row, of the few snapshots there are (83 on upstream's streams, 36,773 cells).
@functools.lru_cache(maxsize=1 << 12)
def _seen(snapshot: str | None, commit: str | None, subject: str | None = None) -> str:
    """A snapshot, and the upstream commit it was taken at, in one cell."""
    return html.breakable(snapshot) + "<br>" + html.commit(commit) + (f' <span class="key">{text(subject)}</span>' if subject else "")


def _points_table(points: list[dict[str, Any]]) -> str:
    """The chart's points; each run links to its row in the page's table of runs."""
    headers = ["sweep", "x", "implementation", "median [p20, p80]", "ratio", "baseline", "noise", "liger version", "run", "first seen in"]
    rows = (
        [
            html.breakable(p["sweep_workload"]),
            text(p["x_value"]),
            text(implementations.label(p["provider"], p["backend"])),
            _spread(p),
            text(p["ratio"]),
            text(implementations.label(p["baseline_provider"], p["baseline_backend"]) if p["baseline_provider"] else None),
            text(p["noise"]),
            text(p["liger_version"]),
            f'<a href="#{html.anchor_id("run", p["run_id"])}">{html.breakable(p["run_id"])}</a>',
            _seen(p["first_seen_snapshot"], p["first_seen_commit"]),
        ]
        for p in points
    )
    return html.table(headers, rows, numeric=["median [p20, p80]", "ratio"])


def _runs_table(runs: pl.DataFrame) -> str:
    # Thirteen columns, not nineteen: the median with its band and unit, pass and metric, each snapshot with its
    # commit in one cell, and run ids that wrap (issue 31: tables wider than the page).
    headers = [
        "run",
        "GPU",
        "pass · metric",
        "implementation",
        "x",
        "status",
        "median [p20, p80]",
        "liger version",
        "observed at",
        "CI folder",
        "first seen in",
        "last seen in",
        "at head",
    ]
    records = list(runs.iter_rows(named=True))
    rows = (
        [
            f'<code id="{html.anchor_id("run", r["run_id"])}">{html.breakable(r["run_id"])}</code>',
            text(r["gpu_name"]),
            text(f"{r['pass']} · {r['metric']}"),
            text(implementations.label(r["provider"], r["backend"])),
            text(r["x_value"]),
            text(r["status"]),
            _spread(r),
            text(r["liger_version"]),
            text(r["observed_at"]),
            text(changes_page.commit_label(r["benchmarked_commit"], r["release"]) if r["benchmarked_commit"] else None),
            _seen(r["first_seen_snapshot"], r["first_seen_commit"], r["first_seen_subject"]),
            _seen(r["last_seen_snapshot"], r["last_seen_commit"]),
            text(r["in_latest"]),
        ]
        for r in records
    )
    attrs = (' class="failed"' if r["status"] != "passed" else "" for r in records)
    return html.table(headers, rows, numeric=["median [p20, p80]"], row_attrs=attrs)
