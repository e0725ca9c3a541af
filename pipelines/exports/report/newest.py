"""What changed in the newest run: the section the changes page and the report's front page open with.

The newest run is upstream CI's newest benchmarked commit (its folder, e.g. `ab7fe2a`). For every series
(one implementation in one comparable group) with a point there, its latest value is set against the one
before it: the series' previous commit (its reruns as their median, as the change points count them), or,
when a change point of the series (either stream, at least the minimum effect) came after its third
newest commit, the level before that change: a step the newest two runs show is news even when the data
stream saw it first (tvd's liger forward 1.7x faster, drawn at `e6f84b8` and still new at `ab7fe2a`).
A series moved when the two differ by more than NOISES x sqrt(2) noises (three sigmas of a difference of
two runs, series_noise.noise) and by the minimum effect (pipelines/core/effect.py); a series of unknown
noise says nothing. The lines are per kernel, GPU, pass, metric and implementation, liger's family first,
then the largest move first.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import median
from typing import Any

import polars as pl

from pipelines.core import effect

NOISES = 3.0
SERIES = ("group_id", "provider", "backend")


@dataclass(frozen=True)
class Moved:
    """One kernel's implementation on one GPU, pass and metric whose newest point moved in some workloads."""

    kernel: str
    gpu_name: str
    pass_: str
    metric: str
    provider: str
    backend: str
    ratios: list[float]  # previous / latest of each workload that moved (above 1: faster or leaner now)
    workloads: int  # workloads of this line with a point in the newest run
    against: list[str]  # the commits the latest is set against

    @property
    def typical(self) -> float:
        return math.exp(median(math.log(r) for r in self.ratios))

    @property
    def largest(self) -> float:
        return max(self.ratios, key=lambda r: abs(math.log(r)))

    @property
    def slower(self) -> int:
        return sum(r < 1 for r in self.ratios)


@dataclass(frozen=True)
class Newest:
    commit: str | None  # the newest CI folder's label, None when the warehouse has no CI run
    observed: dt.datetime | None
    moved: list[Moved]


def newest_changes(series: pl.DataFrame, noise: pl.DataFrame, change_points: pl.DataFrame, label) -> Newest:
    """`series`: report_series.sql (every CI run); `noise`: series_noise; `change_points`: report_change_points.sql;
    `label(commit, release)` names a folder."""
    if not series.height:
        return Newest(None, None, [])
    newest = series.sort("observed_at").row(-1, named=True)
    newest_commit = newest["benchmarked_commit"]
    # Each series' points: one per benchmarked commit (reruns as their median), placed at the commit's first run.
    first_run = series.group_by("benchmarked_commit").agg(pl.col("observed_at").min().alias("placed"))
    # Only the series with a point in the newest run are read further.
    present = series.filter(pl.col("benchmarked_commit") == newest_commit).select(*SERIES).unique()
    points = (
        series.join(present, on=list(SERIES))
        .join(first_run, on="benchmarked_commit")
        .group_by(*SERIES, "benchmarked_commit")
        .agg(
            pl.col("value").log().median().exp().alias("value"),
            pl.col("placed").first(),
            pl.col("release").sort_by("observed_at").first(),
            pl.col("kernel", "gpu_name", "pass", "metric", "workload_slug").first(),
        )
        .sort(*SERIES, "placed")
    )
    noises = {(g, p, b): n for g, p, b, n in noise.select(*SERIES, "noise").iter_rows()}
    recent = _newest_change_points(change_points)
    lines: dict[tuple, dict[str, Any]] = {}
    for key, rows in _by_series(_newest_three(points)):
        if rows[-1]["points"] < 2 or rows[-1]["benchmarked_commit"] != newest_commit:
            continue
        latest, previous = rows[-1], rows[-2]
        before, against = previous["value"], label(previous["benchmarked_commit"], previous["release"])
        change = recent.get(key)
        if change is not None and len(rows) >= 3 and change["observed_at"] > rows[-3]["placed"]:
            before, against = change["before_value"], label(change["before_commit"], None)
        line = lines.setdefault(
            (latest["kernel"], latest["gpu_name"], latest["pass"], latest["metric"], key[1], key[2]),
            {"ratios": [], "workloads": 0, "against": set()},
        )
        line["workloads"] += 1
        sigma = noises.get(key)
        if sigma is None or not (before and before > 0 and latest["value"] and latest["value"] > 0):
            continue
        ratio = before / latest["value"]
        if abs(math.log(ratio)) > NOISES * math.sqrt(2) * sigma and not effect.below_min_effect(ratio):
            line["ratios"].append(ratio)
            line["against"].add(against)
    moved = [Moved(*key, line["ratios"], line["workloads"], sorted(line["against"])) for key, line in lines.items() if line["ratios"]]
    moved.sort(key=lambda m: (not m.provider.startswith("liger"), -abs(math.log(m.largest)), m.kernel, m.gpu_name, m.pass_, m.metric))
    return Newest(label(newest_commit, newest["release"]), newest["observed_at"], moved)


def _newest_three(points: pl.DataFrame) -> pl.DataFrame:
    """Each series' three newest points of `points` (ordered by series, then placed), with its number of points:
    all that is read of a series, where reading every point took most of the report's half second here."""
    position = pl.int_range(pl.len()).over(*SERIES)
    count = pl.len().over(*SERIES)
    # Both unsigned: `count - 3` of a series of one or two points would wrap around.
    return points.with_columns(count.alias("points")).filter(position + 3 >= count)


def _by_series(points: pl.DataFrame) -> Iterator[tuple[tuple, list[dict[str, Any]]]]:
    """Each series' key and rows of `points` (ordered by series): one pass over the rows, where a group_by gave a
    frame per series (thousands of them) to read."""
    key: tuple | None = None
    rows: list[dict[str, Any]] = []
    for row in points.iter_rows(named=True):
        here = tuple(row[name] for name in SERIES)
        if here != key:
            if rows:
                yield key, rows
            key, rows = here, []
        rows.append(row)
    if rows:
        yield key, rows


def _newest_change_points(change_points: pl.DataFrame) -> dict[tuple, dict[str, Any]]:
    """Each series' newest change point of at least the minimum effect."""
    found: dict[tuple, dict[str, Any]] = {}
    if not change_points.height:
        return found
    drawn = (
        change_points.filter(~pl.col("below_min_effect").fill_null(False)) if "below_min_effect" in change_points.columns else change_points
    )
    for row in drawn.sort("observed_at").iter_rows(named=True):
        found[(row["group_id"], row["provider"], row["backend"])] = row
    return found
