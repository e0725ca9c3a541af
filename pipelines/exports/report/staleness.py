"""How old each kernel's newest data is, per stream: a kernel upstream stopped benchmarking says so.

Each stream is judged against its own newest run (upstream's CI history ends where its folders end,
the data files go on), so a kernel is *stale* in a stream when its newest run there is more than
STALE_DAYS older than the newest run of any kernel in that stream.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import polars as pl

STALE_DAYS = 90
STREAM_NAMES = {"data": "upstream files", "ci": "upstream CI", "file": "CSV file"}


@dataclass(frozen=True)
class Newest:
    """A kernel's newest run in one stream, against that stream's newest run."""

    stream: str
    newest: dt.datetime
    stream_newest: dt.datetime

    @property
    def days_behind(self) -> int:
        return (self.stream_newest - self.newest).days

    @property
    def stale(self) -> bool:
        return self.days_behind > STALE_DAYS

    @property
    def stream_name(self) -> str:
        return STREAM_NAMES.get(self.stream, self.stream)

    def sentence(self) -> str:
        day = self.newest.strftime("%Y-%m-%d")
        if not self.stale:
            return f"{self.stream_name}: newest run {day}"
        return (
            f"{self.stream_name}: newest run {day}, stale: {self.days_behind} days before that stream's newest run "
            f"({self.stream_newest.strftime('%Y-%m-%d')})"
        )


def newest_per_kernel(runs: pl.DataFrame) -> dict[str, list[Newest]]:
    """Per kernel, its newest run in each stream it has runs in (data first, then ci, then the others)."""
    if not runs.height:
        return {}
    ends = dict(runs.group_by("stream").agg(pl.col("observed_at").max()).iter_rows())
    order = {"data": 0, "ci": 1}
    per_kernel = runs.group_by("kernel", "stream").agg(pl.col("observed_at").max()).iter_rows()
    result: dict[str, list[Newest]] = {}
    for kernel, stream, newest in sorted(per_kernel, key=lambda r: (r[0], order.get(r[1], 2), r[1])):
        result.setdefault(kernel, []).append(Newest(stream, newest, ends[stream]))
    return result
