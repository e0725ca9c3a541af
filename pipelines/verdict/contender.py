"""A contender's CSV read in memory by the ingest's own pure code (SPEC section 9), never staged or stored.

Its rows go through the same parser, normalizer and `describe` the warehouse's runs went through, so a
contender run's group_id, provider and backend are exactly those of the runs it is judged against.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.core.backends import backend_of
from pipelines.ingest.normalize import normalize
from pipelines.ingest.normalize_cache import DistinctCache
from pipelines.ingest.normalize_describe import SOURCES, describe
from pipelines.ingest.parse import iter_records
from pipelines.ingest.parse_fast import FastPathRefused
from pipelines.ingest.parse_header import NotLigerCsv, read_header
from pipelines.ingest.parse_layout import Layout

# The contender is one snapshot of a plain file (SPEC section 1's `file` stream).
STREAM = "file"
# What a judged contender run keeps of the ingest's run columns.
COLUMNS = ("run_id", "kernel", "pass", "metric", "gpu_name", "workload_slug", "provider", "backend", "group_id", "value", "unit")


class BadContender(ValueError):
    """The contender cannot be judged (no such file, not a Liger CSV, no run); the message is the line the user sees."""


@dataclass(frozen=True)
class Contender:
    """The contender's passed runs (COLUMNS), one per run id, and what was left out of them."""

    path: Path
    runs: pl.DataFrame
    rows: int  # data rows in the file
    quarantined: int  # rows the ingest would quarantine (SPEC section 5)
    quarantine_reason: str | None  # the first such row's reason
    failed: int  # runs without a median: nothing to judge
    other_gpus: tuple[str, ...] = ()  # the GPUs of runs `--gpu` left out

    @property
    def gpus(self) -> list[str]:
        return sorted(set(self.runs["gpu_name"].to_list()))


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise BadContender(f"{path}: no such file; give the path of your benchmark CSV") from None
    except IsADirectoryError:
        raise BadContender(f"{path} is a folder: give the path of your benchmark CSV") from None
    except OSError as exc:
        raise BadContender(f"cannot read {path}: {exc.strerror or exc}") from None


def _normalized(data: bytes, snapshot_id: str) -> tuple[pl.DataFrame, pl.DataFrame, DistinctCache, int]:
    """(run rows, quarantine rows, the cache that described them, data rows), as staging would make them."""
    header = read_header(data)
    if header.missing:
        raise NotLigerCsv(f"the header lacks required column(s) {', '.join(header.missing)}")
    for careful in (False, True):
        cache = DistinctCache()
        rows, quarantine, count = [], [], 0
        try:
            for records in iter_records(data, header, careful=careful, layout=Layout()):
                normalized = normalize(records, header, snapshot_id=snapshot_id, cache=cache)
                rows.append(normalized.rows)
                quarantine.append(normalized.quarantine)
                count += records.height
        except FastPathRefused:
            continue  # a row the fast reader cannot take whole: read it all again with the careful one
        if not rows:
            raise NotLigerCsv("it has a header but no rows: nothing to judge")
        return pl.concat(rows), pl.concat(quarantine), cache, count
    raise AssertionError("the careful reader never refuses a file")


def read_contender(path: Path, backend: str | None = None, gpu: str | None = None) -> Contender:
    """The passed runs of the CSV at `path`; its backend from its file name (`backend_of`), unless `backend` is
    given; only the runs of `gpu` when it is given. BadContender when nothing can be judged."""
    path = Path(path)
    data = _read_bytes(path)
    snapshot_id = f"contender/{path.name}"
    try:
        rows, quarantine, cache, count = _normalized(data, snapshot_id)
    except NotLigerCsv as exc:
        raise BadContender(f"{path} is not a Liger benchmark CSV: {exc}") from None
    sources = pl.DataFrame(
        [(snapshot_id, str(path), path.name, STREAM, backend or backend_of(path.name, STREAM), None, None)],
        schema=SOURCES,
        orient="row",
    )
    # One run per run id, as the warehouse keeps it: the first row that wrote it.
    runs = rows.unique("run_id", keep="first", maintain_order=True).with_columns(pl.lit(None, pl.String).alias("ci_snapshot"))
    runs = describe(runs, cache, sources)
    passed = runs.filter(pl.col("status") == "passed")
    other_gpus: tuple[str, ...] = ()
    if gpu is not None:
        other_gpus = tuple(sorted(set(passed["gpu_name"].to_list()) - {gpu}))
        passed = passed.filter(pl.col("gpu_name") == gpu)
        if passed.is_empty():
            named = ", ".join(other_gpus) or "none"
            raise BadContender(f"{path} has no passed run on GPU {gpu!r} (--gpu filters the file's runs); its GPUs: {named}")
    if passed.is_empty():
        reason = f"; the first rejected row: {quarantine['reason'][0]}" if quarantine.height else ""
        raise BadContender(f"{path} has no passed run to judge ({count} rows, {quarantine.height} not readable{reason})")
    return Contender(
        path=path,
        runs=passed.select(COLUMNS),
        rows=count,
        quarantined=quarantine.height,
        quarantine_reason=quarantine["reason"][0] if quarantine.height else None,
        failed=runs.height - runs.filter(pl.col("status") == "passed").height,
        other_gpus=other_gpus,
    )
