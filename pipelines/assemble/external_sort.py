"""The staged rows sorted by run_id in memory bounded by BUCKET_ROWS, whatever the warehouse's size: rows are
partitioned by ranges of run ids into bucket files, and each bucket is deduplicated into runs in turn."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.assemble.conflicts import CONFLICTS
from pipelines.assemble.run_identity import RENAMED, STAGED_RUNS, SnapshotMarks, identify
from pipelines.core import schemas
from pipelines.core.background import ahead
from pipelines.ingest.staging import RUN_ROWS_UNIQUE
from pipelines.storage import store

# Staged rows deduplicated and sorted in memory at once: what bounds the assembly's memory (about four
# buckets are in flight: read, deduplicated, described, written).
BUCKET_ROWS = 100_000
# Rows partitioned into buckets before they are appended to the buckets' files.
FLUSH_ROWS = 400_000
SAMPLES_PER_BUCKET = 200
SAMPLED_PARTS = 64
ROWS_PER_SNAPSHOT = 1 << 40


@dataclass(frozen=True)
class StagedPart:
    """One staged part file, where its snapshot stands in the history, and whether that snapshot is a latest one."""

    path: Path
    snapshot_id: str
    position: int
    latest: bool


def read_part(part: StagedPart, schema: pl.Schema, columns: list[str] | None = None) -> pl.DataFrame:
    try:
        frame = pl.read_parquet(part.path, schema=schema, columns=columns)
    except (OSError, pl.exceptions.PolarsError):
        # Not the reader's message: it can quote the damaged bytes.
        raise _unreadable(part.path) from None
    return frame if frame["row_number"].is_sorted() else frame.sort("row_number")


def _unreadable(path: Path) -> store.DamagedFile:
    return store.DamagedFile(f"{path} is damaged (its footer reads, its data does not): the next run stages its snapshot again", path)


def empty_rows() -> pl.DataFrame:
    return pl.DataFrame(schema={**schemas.RUN_ROWS, "_order": pl.Int64, "_latest": pl.Boolean})


def with_history(frame: pl.DataFrame, part: StagedPart) -> pl.DataFrame:
    # One integer orders every row of the history: the snapshot's place, then the row's.
    return frame.with_columns(
        (pl.lit(part.position, pl.Int64) * ROWS_PER_SNAPSHOT + pl.col("row_number")).alias("_order"),
        pl.lit(part.latest).alias("_latest"),
    )


def sorted_runs(
    parts: list[StagedPart], bounds: list[str], scratch: Path, mapped: store.ParquetAppender, marks: SnapshotMarks | None = None
) -> Iterator[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]]:
    """Each bucket's runs, renamed rows and conflicting rows (see `identify`), in run_id order from one bucket to the next."""
    carry = pl.DataFrame(schema=STAGED_RUNS)
    for bucket_index, rows in enumerate(ahead(_buckets(parts, bounds, scratch, mapped))):
        identified = identify(rows, marks)
        runs, renamed_rows = identified.runs, identified.renamed
        if not carry.is_empty():
            runs = pl.concat([carry, runs]).sort("run_id")
        # A suffixed id can sort past the next range's first ids; it then waits for that bucket.
        if bucket_index < len(bounds) and runs.height and runs["run_id"][-1] >= bounds[bucket_index]:
            beyond = pl.col("run_id") >= bounds[bucket_index]
            carry, runs = runs.filter(beyond), runs.filter(~beyond)
        yield runs, renamed_rows, identified.conflicts
    yield carry, pl.DataFrame(schema=RENAMED), pl.DataFrame(schema=CONFLICTS)


def bucket_bounds(parts: list[StagedPart], rows: int) -> list[str]:
    """Run ids that cut the staged rows into ranges of about BUCKET_ROWS rows each, from a sample of them."""
    buckets = -(-rows // BUCKET_ROWS)
    if buckets <= 1:
        return []
    # From up to SAMPLED_PARTS parts spread over the history: reading every part's run ids costs a pass.
    sampled = parts[:: max(1, len(parts) // SAMPLED_PARTS)]
    every = max(1, rows * len(sampled) // len(parts) // (buckets * SAMPLES_PER_BUCKET))
    try:
        sample = pl.concat([pl.Series("run_id", [], pl.String), *_every_nth_id(sampled, every)]).sort()
    except (OSError, pl.exceptions.PolarsError):
        for part in sampled:
            read_part(part, schemas.RUN_ROWS, ["run_id", "row_number"])  # names the part that does not read
        raise
    cuts = [sample[len(sample) * i // buckets] for i in range(1, buckets)]
    return sorted(set(cuts))


def _every_nth_id(parts: list[StagedPart], every: int) -> Iterator[pl.Series]:
    """Every `every`-th run id of the parts taken end to end (the same sample as one pass over them all), one part read
    at a time: read at once, the sampled parts' ids (half the staged rows at 10M) took 580 MB, and what the allocator
    kept of them raised the peak of every step after."""
    seen = 0
    for part in parts:
        ids = pl.scan_parquet(part.path, schema=schemas.RUN_ROWS).select("run_id").collect()["run_id"]
        # Copied out: a gather of polars' string views would keep the part's whole text alive.
        yield pl.Series("run_id", ids.gather_every(every, -seen % every).to_list(), pl.String)
        seen += ids.len()


def _buckets(parts: list[StagedPart], bounds: list[str], scratch: Path, mapped: store.ParquetAppender) -> Iterator[pl.DataFrame]:
    """The staged rows of each run-id range in turn, in history order, each with `_order` and `_latest`;
    each row's (run_id, snapshot_id, row_number) written to `mapped` as it is read."""

    def staged() -> Iterator[pl.DataFrame]:
        for part in parts:
            frame = read_part(part, schemas.RUN_ROWS)
            mapped.write(frame.select(schemas.RUN_SNAPSHOTS.names()))
            yield with_history(frame, part)

    if not bounds:
        yield pl.concat([empty_rows(), *staged()])
        return
    scratch.mkdir(parents=True, exist_ok=True)
    _partition(ahead(staged()), bounds, scratch)
    for bucket in range(len(bounds) + 1):
        path = _bucket_path(scratch, bucket)
        yield pl.concat([empty_rows(), *([pl.read_parquet(path)] if path.exists() else [])])
        path.unlink(missing_ok=True)


def _partition(frames: Iterator[pl.DataFrame], bounds: list[str], scratch: Path) -> None:
    """Each row appended to its bucket's file, FLUSH_ROWS at a time. A function of its own: the rows it held last
    (a flush's worth, each piece keeping its whole part's text alive) are gone when it returns, not held while every
    bucket is read back and sorted."""
    cut = pl.lit(pl.Series(bounds, dtype=pl.String))
    with _BucketFiles(scratch) as files:
        pending: dict[int, list[pl.DataFrame]] = {}
        held = 0
        for frame in frames:
            frame = frame.with_columns(cut.search_sorted(pl.col("run_id"), side="right").alias("_bucket"))
            for (bucket,), piece in frame.partition_by("_bucket", as_dict=True, include_key=False).items():
                pending.setdefault(bucket, []).append(piece)
            held += frame.height
            if held >= FLUSH_ROWS:
                files.append(pending)
                pending, held = {}, 0
        files.append(pending)


class _BucketFiles:
    """One Parquet file per bucket, appended to as rows arrive: uncompressed (it is read back once, soon) but
    dictionary-encoded, which keeps it small and cheap to read; scratch, so never flushed to disk."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.writers: dict[int, store.ParquetAppender] = {}
        # Parquet encodes a file on one thread: two buckets' files are written at once.
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="buckets")

    def __enter__(self) -> _BucketFiles:
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown()
        for writer in self.writers.values():
            writer.close()

    def append(self, pending: dict[int, list[pl.DataFrame]]) -> None:
        for bucket in pending:
            if bucket not in self.writers:
                self.writers[bucket] = store.ParquetAppender(
                    _bucket_path(self.folder, bucket),
                    empty_rows().schema,
                    (*RUN_ROWS_UNIQUE, "_order"),
                    "none",
                    statistics=False,
                    durable=False,
                )
        writes = [self.pool.submit(lambda b, frames: self.writers[b].write(pl.concat(frames)), b, f) for b, f in pending.items()]
        for write in writes:
            write.result()


def _bucket_path(folder: Path, bucket: int) -> Path:
    return folder / f"{bucket:05d}.parquet"
