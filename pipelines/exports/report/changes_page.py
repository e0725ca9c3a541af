"""The change points as the report lists them: by commit, newest first, regressions first within a
commit, each with its size (ratio), its cause and the baseline that cause is judged by; the changes
page, and the same table on a kernel's page.

A change point (SPEC section 8, table `change_points`) is a persistent shift in one series (the
passed runs of one group and implementation); its ratio is the series' median before over its
median after (above 1: faster or leaner after). Its cause is `host` when the group's baseline
provider moved by the same factor at the same commit, else `code`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipelines.core import effect
from pipelines.core.layout import DATABASE
from pipelines.exports.report import html, implementations
from pipelines.exports.report.html import link, text
from pipelines.exports.report.newest import NOISES, Moved, Newest
from pipelines.exports.report.pages import TITLE, Picture, Site

CHANGES = "changes.html"
ABSENT = (
    f"This {DATABASE} has no change_points table (it was built before change points were computed): "
    "there are no change points to show. Materialize the statistics again to add them."
)
EXPLAINED = (
    "A change point is a persistent shift in one series: the passed runs of one implementation (provider · backend) "
    "in one comparable group (kernel, workload, pass, metric, GPU), over the commits that were benchmarked; "
    "a spike that comes back is not one. Ratio: the series' median before the shift / its median after "
    "(above 1: faster or leaner after), so each ratio is taken against the same implementation before the commit. "
    "Cause: host when the group's baseline (named in its column) moved by the same factor at the same commit, "
    "which is a change of machine rather than of the kernel; code otherwise. Unconfirmed: a step at the newest "
    "one or two commits of its series, which the next runs confirm or refute. "
    f"A step smaller than {effect.MIN_EFFECT:.0%} is not counted as a change: such steps are listed apart, folded."
)

NEWEST_ANCHOR = "newest-run"
NEWEST_SHOWN = 20  # lines open in "what changed in the newest run"; the rest folded below them
UNCONFIRMED = "unconfirmed"


def newest_section(site: Site, newest: Newest, heading: str = "h2") -> str:
    """What changed in the newest run (newest.py): one line per kernel, GPU, pass, metric and implementation
    whose newest point moved beyond its noise, liger first."""
    if newest.commit is None:
        return ""
    parts = [
        f'<section id="{NEWEST_ANCHOR}"><{heading} class="newest">What changed in the newest run: {text(newest.commit)} · {text(newest.observed)}</{heading}>',
        f"<p>Each kernel whose newest point moved beyond its noise ({NOISES:g} sigmas of a difference of two runs) "
        f"and by at least {effect.MIN_EFFECT:.0%}: the latest run against the one before it (against the level before "
        "a change point of the newest two runs, where there is one), liger first. Ratio: before / latest "
        "(above 1: faster or leaner now); moved: workloads that moved of those in the newest run.</p>",
    ]
    if not newest.moved:
        parts.append("<p>No kernel moved beyond its noise in the newest run.</p></section>")
        return "\n".join(parts)
    shown, folded = newest.moved[:NEWEST_SHOWN], newest.moved[NEWEST_SHOWN:]
    parts.append(_newest_table(site, shown))
    if folded:
        parts.append(f"<details><summary>{html.count(len(folded), 'more line')}</summary>{_newest_table(site, folded)}</details>")
    parts.append("</section>")
    return "\n".join(parts)


def newest_for_kernel(site: Site, newest: Newest, kernel: str) -> str:
    """What changed in the newest run, the lines of one kernel: the first thing its page says."""
    if newest.commit is None:
        return ""
    mine = [m for m in newest.moved if m.kernel == kernel]
    heading = (
        f'<h2 id="{NEWEST_ANCHOR}" class="newest">What changed in the newest run: {text(newest.commit)} · {text(newest.observed)}</h2>'
    )
    if not mine:
        return (
            heading
            + f"<p>Nothing of this kernel moved beyond its noise in the newest run ({link('../' + CHANGES + '#' + NEWEST_ANCHOR, 'every kernel')}).</p>"
        )
    shown, folded = mine[:NEWEST_SHOWN], mine[NEWEST_SHOWN:]
    return (
        heading + f"<p>Each line whose newest point moved beyond its noise and by at least {effect.MIN_EFFECT:.0%}, liger first. "
        "Ratio: before / latest (above 1: faster or leaner now); moved: workloads that moved of those in the newest run "
        f"({link('../' + CHANGES + '#' + NEWEST_ANCHOR, 'every kernel')}).</p>"
        + _newest_table(site, shown, kernel_column=False)
        + (html.fold(html.count(len(folded), "more line"), _newest_table(site, folded, kernel_column=False)) if folded else "")
    )


def _newest_table(site: Site, moved: list[Moved], kernel_column: bool = True) -> str:
    headers = ["kernel", "GPU", "pass · metric", "implementation", "moved", "typical", "largest", "against"]
    if not kernel_column:  # on the kernel's own page
        headers = headers[1:]
    return html.table(
        headers,
        (
            [
                *(
                    [link(f"{site.kernel_pages[m.kernel]}#history", m.kernel) if m.kernel in site.kernel_pages else text(m.kernel)]
                    if kernel_column
                    else []
                ),
                text(m.gpu_name),
                text(f"{m.pass_} · {m.metric}"),
                text(implementations.label(m.provider, m.backend)),
                text(f"{len(m.ratios)} of {m.workloads}" + (f" ({m.slower} slower)" if 0 < m.slower < len(m.ratios) else "")),
                size(m.typical, m.metric),
                size(m.largest, m.metric),
                text(", ".join(m.against)),
            ]
            for m in moved
        ),
        row_attrs=(' class="regressed"' if m.typical < 1 else ' class="improved"' for m in moved),
    )


def drawn(change_points: pl.DataFrame) -> pl.DataFrame:
    """The change points drawn and counted as changes: those of at least the minimum effect."""
    if "below_min_effect" not in change_points.columns:
        return change_points
    return change_points.filter(~pl.col("below_min_effect").fill_null(False))


def small(change_points: pl.DataFrame) -> pl.DataFrame:
    """The change points below the minimum effect: kept in the table, listed apart, not drawn."""
    if "below_min_effect" not in change_points.columns:
        return change_points.clear()
    return change_points.filter(pl.col("below_min_effect").fill_null(False))


def verdict_cell(row: dict[str, Any]) -> str:
    """The verdict, and `unconfirmed` under a candidate (too few runs after it yet)."""
    if row.get("status") == "candidate":
        return f'{text(row["verdict"])}<br><em class="candidate">{UNCONFIRMED}</em>'
    return text(row["verdict"])


@dataclass(frozen=True)
class CommitChanges:
    """The change points that appeared at one commit (the first run after the shift), regressions first."""

    commit: str | None
    release: str | None
    first_observed: dt.datetime | None
    rows: list[dict[str, Any]]

    @property
    def label(self) -> str:
        return commit_label(self.commit, self.release)

    @property
    def anchor(self) -> str:
        return html.anchor_id("commit", f"{self.commit}\0{self.release}")

    def count(self, verdict: str, cause: str | None = None) -> int:
        return sum(r["verdict"] == verdict and (cause is None or r["cause"] == cause) for r in self.rows)


def commit_label(commit: str | None, release: str | None) -> str:
    """A benchmarked commit as its CI folder is named (`7644a0f-v0.7.0`); a data commit cut to 12 characters."""
    if not commit:
        return "—"
    return f"{commit[:12]}-v{release}" if release else commit[:12]


def _severity(row: dict[str, Any]) -> tuple[int, float]:
    """Regressions before improvements, each the largest first."""
    ratio = row["ratio"] if row["ratio"] and row["ratio"] > 0 and math.isfinite(row["ratio"]) else 1.0
    return (0, ratio) if row["verdict"] == "regressed" else (1, -ratio)


def by_commit(change_points: pl.DataFrame) -> list[CommitChanges]:
    """The change points grouped by the commit after the shift, newest commit first (its first run's time)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in change_points.iter_rows(named=True):
        release = row["after_release"] if row["after_benchmarked_commit"] == row["after_commit"] else None
        groups.setdefault((row["after_commit"], release), []).append(row)
    commits = []
    for (commit, release), rows in groups.items():
        times = [r["observed_at"] for r in rows if r["observed_at"] is not None]
        ordered = sorted(rows, key=lambda r: (*_severity(r), r["kernel"], r["gpu_name"], r["pass"], r["metric"], r["workload_slug"]))
        commits.append(CommitChanges(commit, release, min(times) if times else None, ordered))
    epoch = dt.datetime.min.replace(tzinfo=dt.UTC)
    return sorted(commits, key=lambda c: (c.first_observed or epoch, c.label), reverse=True)


def size(ratio: float | None, metric: str) -> str:
    """A ratio (before / after) as what a reader asks, in HTML kept on one line: how much slower or faster, more or less memory."""
    if not ratio or ratio <= 0 or not math.isfinite(ratio):
        return text(ratio)
    worse, better = ("slower", "faster") if metric == "speed" else ("more", "less")
    change = 1 / ratio - 1  # after / before - 1
    word = worse if change > 0 else better
    return f'<span class="nowrap">{ratio:.3g}x</span> <span class="nowrap">({abs(change):.0%} {word})</span>'


def baseline(row: dict[str, Any]) -> str:
    provider = row["baseline_provider"]
    if not provider:
        return "none in the group"
    return implementations.label(provider, row["baseline_backend"])


def change_table(rows: Iterable[dict[str, Any]], run_href: Callable[[str, str], str], kernel_href: Callable[[str], str] | None) -> str:
    """The change points as a table; `run_href(kernel, run_id)` links each run, `kernel_href` each kernel."""
    # Thirteen columns, not sixteen: the levels in one cell with their unit, pass and metric in one (issue 31:
    # tables wider than the page).
    headers = [
        "verdict",
        "ratio (before / after)",
        "kernel",
        "GPU",
        "pass · metric",
        "workload",
        "implementation",
        "before → after",
        "cause",
        "baseline",
        "confidence",
        "commits",
        "runs",
    ]
    records = list(rows)
    body = (
        [
            verdict_cell(r),
            size(r["ratio"], r["metric"]),
            f'<a href="{html.escape(kernel_href(r["kernel"]))}">{html.breakable(r["kernel"])}</a>' if kernel_href else "",
            text(r["gpu_name"]),
            text(f"{r['pass']} · {r['metric']}"),
            html.breakable(r["workload_slug"]),
            text(implementations.label(r["provider"], r["backend"])),
            f'<span class="nowrap">{text(r["before_value"])} →</span> <span class="nowrap">{text(r["after_value"])} {text(r["unit"])}</span>',
            text(r["cause"]),
            text(baseline(r)),
            text(r["confidence"]),
            f'<span class="nowrap">{text(commit_label(r["before_commit"], _release(r, "before")))} →</span> '
            + f'<span class="nowrap">{text(commit_label(r["after_commit"], _release(r, "after")))}</span>',
            link(run_href(r["kernel"], r["before_run_id"]), "before", r["before_run_id"])
            + " "
            + link(run_href(r["kernel"], r["after_run_id"]), "after", r["after_run_id"]),
        ]
        for r in records
    )
    if kernel_href is None:  # on the kernel's own page
        headers.remove("kernel")
        body = ([cell for i, cell in enumerate(row) if i != 2] for row in body)
    attrs = (f' class="{html.text(r["verdict"])}"' for r in records)
    return html.table(headers, body, numeric=["before → after", "confidence"], row_attrs=attrs)


def _release(row: dict[str, Any], side: str) -> str | None:
    return row[f"{side}_release"] if row[f"{side}_benchmarked_commit"] == row[f"{side}_commit"] else None


def changes_page(
    site: Site, timeline: Picture, commits: list[CommitChanges], has_change_points: bool, newest: Newest, smaller: list[dict[str, Any]]
) -> str:
    """What changed in the newest run, then every change point of at least the minimum effect, grouped by the
    commit it appeared at, newest commit first, regressions first; the smaller ones folded at the end."""
    total = sum(len(c.rows) for c in commits)
    regressed = sum(c.count("regressed") for c in commits)
    parts = [
        "<h1>Change points</h1>",
        newest_section(site, newest),
        '<h2 id="every">Every change point</h2>',
        f"<p>{text(EXPLAINED)}</p>",
    ]
    if not has_change_points:
        parts.append(f'<p class="note">{text(ABSENT)}</p>')
    parts.append(
        f"<p>{total} change points at {len(commits)} commits: {regressed} regressions, {total - regressed} improvements. "
        "Commits newest first; within a commit, regressions first, the largest first. The run links lead to each "
        "run's row, with its snapshots and commits, on its kernel's page.</p>"
    )
    parts.append(html.image(timeline.src, "Change points over time, by ratio", timeline.size))
    if commits:
        parts.append(
            html.table(
                [
                    "commit",
                    "first run after",
                    "regressions (code)",
                    "regressions (host)",
                    "improvements",
                    "unconfirmed",
                    "largest regression",
                ],
                (
                    [
                        link(f"#{c.anchor}", c.label, c.commit),
                        text(c.first_observed),
                        text(c.count("regressed", "code")),
                        text(c.count("regressed", "host")),
                        text(c.count("improved")),
                        text(sum(r.get("status") == "candidate" for r in c.rows)),
                        size(c.rows[0]["ratio"], c.rows[0]["metric"]) if c.count("regressed") else text(None),
                    ]
                    for c in commits
                ),
                numeric=["regressions (code)", "regressions (host)", "improvements", "unconfirmed"],
            )
        )
    # One folded line per commit: the page opens a few screens tall, its change points one click away (issue 31).
    for c in commits:
        parts.append(
            html.fold(
                f"<h2>{text(c.label)} · {text(c.first_observed)}: {html.count(c.count('regressed'), 'regression')}, "
                f"{html.count(c.count('improved'), 'improvement')}</h2>",
                change_table(c.rows, site.run_href, lambda k: f"{site.kernel_pages[k]}#change-points"),
                summary_html=True,
                anchor=c.anchor,
            )
        )
    if smaller:
        parts.append(
            html.fold(
                f"{html.count(len(smaller), 'step')} smaller than {effect.MIN_EFFECT:.0%}, not counted as changes",
                change_table(smaller, site.run_href, lambda k: f"{site.kernel_pages[k]}#change-points"),
            )
        )
    return html.page(f"Change points · {TITLE}", "\n".join(parts), site.footer)
