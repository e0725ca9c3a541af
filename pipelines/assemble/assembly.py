"""Assemble the warehouse tables (SPEC section 4) from every staged snapshot: the staged rows sorted
(external_sort) into runs (run_identity), and the tables built from them (table_builders)."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from pipelines.assemble import external_sort
from pipelines.assemble.conflicts import quarantine_rows
from pipelines.assemble.external_sort import StagedPart, read_part
from pipelines.assemble.run_identity import marks_of
from pipelines.assemble.snapshot_history import History
from pipelines.assemble.table_builders import environments, measurements, protocols, snapshots
from pipelines.core import allocator, layout, schemas
from pipelines.core.background import ahead
from pipelines.core.canonical import canonical_json
from pipelines.ingest.normalize import DistinctCache, describe
from pipelines.ingest.source import Listing
from pipelines.ingest.staging import RUN_ROWS_UNIQUE, SnapshotMeta, staged_metas
from pipelines.storage import store

# The tables with a row per run or per staged row, and their columns written without a dictionary.
ROW_TABLES_UNIQUE = {"runs": RUN_ROWS_UNIQUE, "measurements": ("run_id", "value", "raw_value"), "run_snapshots": ()}
# The row tables written in run_id order, whose run_id statistics let a lookup by id skip row groups
# (run_snapshots is in history order: there they would prune nothing).
SORTED_BY = {"runs": "run_id", "measurements": "run_id"}


def fingerprint(metas: list[SnapshotMeta], listing: Listing | None) -> str:
    """Changes whenever an assembled table could change with the same code: staged snapshots, the branch as it is
    now (which snapshots are on it, in which order, which files are at its head)."""
    parts = {
        "snapshots": sorted(json.dumps(asdict(m), sort_keys=True) for m in metas),
        "files_at_head": sorted(listing.files_at_head) if listing is not None else None,
        "on_branch": [[ref.snapshot_id, ref.sequence] for ref in listing.snapshots] if listing is not None else None,
        # Where each CI folder's commit sits in `main` now (a rewrite of main can move it).
        "main_places": sorted(
            [ref.snapshot_id, ref.main_commit, ref.main_position] for ref in listing.snapshots if ref.main_position is not None
        )
        if listing is not None
        else None,
    }
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


@dataclass(frozen=True)
class TableFile:
    path: Path
    rows: int


def staged_parts(warehouse: Path, history: History, prefix: str) -> list[StagedPart]:
    """The `prefix` parts of every staged snapshot, oldest snapshot first, each snapshot's in row order."""
    return [
        StagedPart(path, m.snapshot_id, position, m.snapshot_id in history.latest)
        for position, m in enumerate(history.ordered)
        for path in layout.parts(layout.Layout(warehouse).staged(m.snapshot_id), prefix)
    ]


def assemble(warehouse: Path, listing: Listing | None) -> dict[str, pl.DataFrame]:
    """Every table in memory: what `write_tables` writes, read back (for small warehouses and tests)."""
    with tempfile.TemporaryDirectory(prefix="assemble-") as folder:
        files = write_tables(warehouse, listing, Path(folder))
        return {name: pl.read_parquet(file.path, schema=schemas.TABLES[name]) for name, file in files.items()}


def write_tables(warehouse: Path, listing: Listing | None, out: Path) -> dict[str, TableFile]:
    """Write every table from the staged snapshots into `out` (one Parquet file each), in memory bounded
    by BUCKET_ROWS whatever the warehouse's size.

    Runs are the first occurrence of each run key in history order. They are deduplicated and sorted
    bucket by bucket: a bucket holds every staged row whose run_id falls in one range of run ids
    (a run key always has the same run_id, so all of a run's rows meet in one bucket), and the
    ranges are in order, so the buckets' sorted runs, one after another, are all runs sorted.
    """
    metas = staged_metas(warehouse)
    history = History(tuple(metas), listing)
    row_parts = staged_parts(warehouse, history, "rows")
    accepted = sum(m.accepted for m in metas)
    describing = _Describing(_staged_cache(warehouse, metas), history.sources())
    scratch = out / "_buckets"
    runs_writer, measurements_writer, mapped_writer = (
        store.ParquetAppender(out / layout.table_file(name), schemas.TABLES[name], unique, sorted_by=SORTED_BY.get(name))
        for name, unique in ROW_TABLES_UNIQUE.items()
    )
    # run_snapshots (which run each accepted row is) is written as the rows are read into buckets; again
    # from the staged parts if some runs got suffixed ids.
    gpus: set[str] = set()
    metric_passes: set[tuple[str, str]] = set()
    renamed: list[pl.DataFrame] = []
    conflicts: list[pl.DataFrame] = []
    try:
        # Reading a bucket, deduplicating the one before and writing the one before that run at once;
        # a bucket's measurements are built and written while its runs are (Parquet encoding is one
        # thread per file).
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="measurements") as measuring:
            sorted_runs = ahead(
                external_sort.sorted_runs(
                    row_parts, external_sort.bucket_bounds(row_parts, accepted), scratch, mapped_writer, marks_of(history)
                )
            )
            for runs, renamed_rows, conflicting in ahead(_described(sorted_runs, describing)):
                measured = measuring.submit(lambda bucket: measurements_writer.write(measurements(bucket)), runs)
                renamed.append(renamed_rows)
                conflicts.append(conflicting)
                runs_writer.write(runs)
                gpus.update(runs["gpu_name"].unique().to_list())
                metric_passes.update(runs.select("metric", "pass").unique().rows())
                measured.result()
                allocator.give_back_freed()
    finally:
        runs_writer.close()
        measurements_writer.close()
        mapped_writer.close()
        shutil.rmtree(scratch, ignore_errors=True)
    renamed_rows = pl.concat(renamed)
    held = conflict_quarantine(pl.concat(conflicts), history)
    files = {
        "runs": TableFile(runs_writer.path, runs_writer.rows),
        "measurements": TableFile(measurements_writer.path, measurements_writer.rows),
        "run_snapshots": TableFile(mapped_writer.path, mapped_writer.rows)
        if renamed_rows.is_empty() and held.is_empty()
        else _write_run_snapshots(row_parts, renamed_rows, held, mapped_writer.path),
        "quarantine": _write_quarantine(staged_parts(warehouse, history, "quarantine"), held, out / layout.table_file("quarantine")),
    }
    small = {
        "environments": environments(sorted(gpus)),
        "protocols": protocols(sorted(metric_passes)),
        "snapshots": snapshots(history, dict(held.group_by("snapshot_id").len().rows())),
    }
    for name, frame in small.items():
        store.write_parquet(frame, out / layout.table_file(name))
        files[name] = TableFile(out / layout.table_file(name), frame.height)
    return {name: files[name] for name in schemas.TABLES}


@dataclass(frozen=True)
class _Describing:
    """What `normalize.describe` joins back to the runs: the per-value answers and each snapshot's source."""

    cache: DistinctCache
    sources: pl.DataFrame


def _staged_cache(warehouse: Path, metas: list[SnapshotMeta]) -> DistinctCache:
    """A cache that knows the workload answers staging computed for every staged snapshot."""
    cache = DistinctCache()
    paths = [layout.Layout(warehouse).staged(m.snapshot_id) / layout.WORKLOADS for m in metas]
    answers = [frame for frame in (_kept_answers(path, cache.workloads.known.schema) for path in paths) if frame is not None]
    if answers:
        cache.workloads.seed(pl.concat(answers))
    return cache


def _kept_answers(path: Path, schema: pl.Schema) -> pl.DataFrame | None:
    """A snapshot's kept workload answers; None when the file is missing, unreadable or not of the
    lookup's columns. They only save work: the answers they would have given are computed again."""
    try:
        frame = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError):
        return None
    if any(frame.schema.get(name) != dtype for name, dtype in schema.items()):
        return None
    return frame.select(schema.names())


def _described(
    sorted_runs: Iterator[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]], describing: _Describing
) -> Iterator[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]]:
    """Each bucket's runs with every column of RUNS: a step of its own, so that the next bucket is
    deduplicated while this one is described."""
    for runs, renamed_rows, conflicting in sorted_runs:
        runs = describe(runs, describing.cache, describing.sources)
        yield runs.select(schemas.RUNS.names()).cast(schemas.RUNS), renamed_rows, conflicting


def conflict_quarantine(conflicting: pl.DataFrame, history: History) -> pl.DataFrame:
    """The quarantine rows of the rows that conflict with their run (see conflicts), in history order."""
    if conflicting.is_empty():
        return pl.DataFrame(schema=schemas.QUARANTINE)
    place = {m.snapshot_id: position for position, m in enumerate(history.ordered)}
    conflicting = conflicting.sort(pl.col("snapshot_id").replace_strict(place, return_dtype=pl.Int64), "row_number")
    return quarantine_rows(conflicting, {m.snapshot_id: m.header for m in history.staged})


def _write_run_snapshots(parts: list[StagedPart], renamed: pl.DataFrame, held: pl.DataFrame, path: Path) -> TableFile:
    """Which run each accepted row is, in history order, part by part; a row held in quarantine (a conflict) is none."""
    writer = store.ParquetAppender(path, schemas.RUN_SNAPSHOTS)
    try:
        for frame in ahead(read_part(part, schemas.RUN_ROWS, ["run_id", "snapshot_id", "row_number"]) for part in parts):
            if not held.is_empty():
                frame = frame.join(held, on=["snapshot_id", "row_number"], how="anti", maintain_order="left")
            if not renamed.is_empty():
                frame = frame.join(renamed, on=["snapshot_id", "row_number"], how="left", suffix="_new", maintain_order="left")
                frame = frame.with_columns(pl.coalesce("run_id_new", "run_id").alias("run_id"))
            writer.write(frame.select(schemas.RUN_SNAPSHOTS.names()))
    finally:
        writer.close()
    return TableFile(path, writer.rows)


def _write_quarantine(parts: list[StagedPart], held: pl.DataFrame, path: Path) -> TableFile:
    """The staged quarantine rows, part by part, with each snapshot's conflicting rows in their places."""
    writer = store.ParquetAppender(path, schemas.QUARANTINE)
    by_snapshot = held.partition_by("snapshot_id", as_dict=True) if not held.is_empty() else {}
    try:
        for index, part in enumerate(parts):
            frame = read_part(part, schemas.QUARANTINE)
            last_of_snapshot = index + 1 == len(parts) or parts[index + 1].snapshot_id != part.snapshot_id
            if last_of_snapshot and (part.snapshot_id,) in by_snapshot:
                frame = pl.concat([frame, by_snapshot.pop((part.snapshot_id,))]).sort("row_number")
            writer.write(frame)
        for frame in by_snapshot.values():  # a snapshot with rows has quarantine parts; never reached
            writer.write(frame)
    finally:
        writer.close()
    return TableFile(path, writer.rows)
