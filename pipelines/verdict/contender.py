"""A contender's CSV read in memory by the ingest's own pure code (SPEC section 9), never staged or stored.

Its rows go through the same parser, normalizer and `describe` the warehouse's runs went through, so a
contender run's group_id, provider and backend are exactly those of the runs it is judged against. Rows that
repeat a run (its key and timestamp) with other values are conflicts, as the ingest quarantines them: such a
run is left out and named, so the verdict never depends on which row came first. Runs without a median (failed
upstream) are kept apart: a run that passed in the baseline and failed in the contender is a regression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.assemble import COMPARED
from pipelines.core.kernel_backends import contender_backend
from pipelines.ingest.normalize import SOURCES, DistinctCache, describe, normalize
from pipelines.ingest.parse import FastPathRefused, NotLigerCsv, RecordLayout, iter_records, read_header

# The contender is one snapshot of a plain file (SPEC section 1's `file` stream).
STREAM = "file"
# What a judged contender run keeps of the ingest's run columns.
COLUMNS = (
    "run_id",
    "kernel",
    "pass",
    "metric",
    "gpu_name",
    "workload_slug",
    "provider",
    "backend",
    "group_id",
    "value",
    "unit",
    # The sweep a run belongs to and its place on it (launch-bound detection), its own p20-p80 (its noise when one
    # baseline run is all there is) and what says when and with what it ran (a `no baseline` line names them).
    "sweep_digest",
    "x_name",
    "x_value",
    "p20",
    "p80",
    "liger_version",
    "observed_at",
)
# A conflict: a run written twice or more with other values; what the user sees of it.
CONFLICTS = pl.Schema(
    {"run_id": pl.String, "kernel": pl.String, "provider": pl.String, "pass": pl.String, "metric": pl.String, "rows": pl.Int64}
)


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
    failed_runs: pl.DataFrame = field(default_factory=lambda: pl.DataFrame())  # COLUMNS of the failed runs (value null)
    conflicts: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=CONFLICTS))  # runs left out, CONFLICTS

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
            for records in iter_records(data, header, careful=careful, layout=RecordLayout()):
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


def conflicts_of(rows: pl.DataFrame) -> pl.DataFrame:
    """The runs (CONFLICTS) whose rows disagree in a value the ingest compares (pipelines/assemble/conflicts.py):
    the same key and timestamp, another median, p20, p80, unit or version."""
    per_run = rows.group_by("run_id", maintain_order=True).agg(
        pl.len().alias("rows"),
        pl.any_horizontal([pl.col(c).n_unique() > 1 for c in COMPARED]).alias("_differs"),
        *[pl.col(c).first() for c in ("kernel", "provider", "pass", "metric")],
    )
    return per_run.filter(pl.col("_differs")).select(CONFLICTS.names()).cast(CONFLICTS)


def read_contender(path: Path, backend: str | None = None, gpu: str | None = None) -> Contender:
    """The passed runs of the CSV at `path`; its backend from its file name (`contender_backend`: a known suffix,
    else triton) unless `backend` is given; only the runs of `gpu` when it is given. BadContender when nothing can
    be judged."""
    path = Path(path)
    data = _read_bytes(path)
    snapshot_id = f"contender/{path.name}"
    try:
        rows, quarantine, cache, count = _normalized(data, snapshot_id)
    except NotLigerCsv as exc:
        raise BadContender(f"{path} is not a Liger benchmark CSV: {exc}") from None
    sources = pl.DataFrame(
        [(snapshot_id, str(path), path.name, STREAM, backend or contender_backend(path.name), None, None)],
        schema=SOURCES,
        orient="row",
    )
    conflicts = conflicts_of(rows)
    rows = rows.filter(~pl.col("run_id").is_in(conflicts["run_id"].implode()))
    # One run per run id: repeats that agree in every compared value are the same run written twice.
    runs = rows.unique("run_id", keep="first", maintain_order=True).with_columns(pl.lit(None, pl.String).alias("ci_snapshot"))
    runs = describe(runs, cache, sources) if runs.height else runs
    passed = runs.filter(pl.col("status") == "passed") if runs.height else runs
    failed = runs.filter(pl.col("status") != "passed") if runs.height else runs
    other_gpus: tuple[str, ...] = ()
    if gpu is not None and runs.height:
        other_gpus = tuple(sorted(set(runs["gpu_name"].to_list()) - {gpu}))
        passed = passed.filter(pl.col("gpu_name") == gpu)
        failed = failed.filter(pl.col("gpu_name") == gpu)
        if passed.is_empty() and failed.is_empty():
            named = ", ".join(other_gpus) or "none"
            raise BadContender(f"{path} has no passed run on GPU {gpu!r} (--gpu filters the file's runs); its GPUs: {named}")
    if passed.is_empty() and failed.is_empty():
        reason = f"; the first rejected row: {quarantine['reason'][0]}" if quarantine.height else ""
        left = f", {conflicts.height} run(s) written twice with other values" if conflicts.height else ""
        raise BadContender(f"{path} has no run to judge ({count} rows, {quarantine.height} not readable{left}{reason})")
    return Contender(
        path=path,
        runs=passed.select(COLUMNS),
        rows=count,
        quarantined=quarantine.height,
        quarantine_reason=quarantine["reason"][0] if quarantine.height else None,
        failed=failed.height,
        other_gpus=other_gpus,
        failed_runs=failed.select(COLUMNS),
        conflicts=conflicts,
    )
