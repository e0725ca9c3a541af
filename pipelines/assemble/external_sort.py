"""The staged rows sorted by run_id in memory bounded by BUCKET_ROWS, whatever the warehouse's size: rows are
partitioned by ranges of run ids (buckets) into scratch files, FLUSH_ROWS at a time, and each bucket is read back from
them and deduplicated into runs in turn."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.ipc as ipc

from pipelines.assemble.conflicts import CONFLICTS
from pipelines.assemble.run_identity import RENAMED, STAGED_RUNS, SnapshotMarks, identify
from pipelines.core import allocator, schemas
from pipelines.core.background import ahead
from pipelines.storage import store

# Staged rows deduplicated and sorted in memory at once: what bounds the assembly's memory (about four
# buckets are in flight: read, deduplicated, described, written). At 100k rows a bucket, normalization peaked at
# 1,258 MB at 1M rows and 1,347 at 10M; at 60k, 884-892 and 945, for 7-10% more CPU (docs/performance.md).
BUCKET_ROWS = 60_000
# Rows partitioned into buckets and written as one scratch file (_Flush); the partition holds two copies of them.
FLUSH_ROWS = 200_000
# The run ids sampled per bucket to cut the ranges. The assembly's peak follows its largest bucket, and the largest of
# more buckets strays further from BUCKET_ROWS: with buckets of 100k, at 200 a sample the largest held 108k rows at 1M
# against 118k at 10M; at 2,000, 102k against 106k, for 0.1 s more of sampling at 10M (docs/performance.md).
SAMPLES_PER_BUCKET = 2_000
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
    flushes = _partition(ahead(staged()), bounds, scratch)
    try:
        for bucket in range(len(bounds) + 1):
            pieces = [flush.bucket(bucket) for flush in flushes]
            yield pl.concat([empty_rows(), *(piece for piece in pieces if piece is not None)])
    finally:
        for flush in flushes:
            flush.path.unlink(missing_ok=True)


def _partition(frames: Iterator[pl.DataFrame], bounds: list[str], scratch: Path) -> list[_Flush]:
    """Each row written to its bucket's batches of a scratch file, FLUSH_ROWS at a time (`_Flush`). A function of its
    own: the rows it held last (a flush's worth of parts) are gone when it returns, not held while every bucket is read
    back and sorted."""
    cut = pl.lit(pl.Series(bounds, dtype=pl.String))
    flushes: list[_Flush] = []
    pending: list[pl.DataFrame] = []
    held = 0
    for frame in frames:
        pending.append(frame.with_columns(cut.search_sorted(pl.col("run_id"), side="right").alias("_bucket")))
        held += frame.height
        if held >= FLUSH_ROWS:
            flushes.append(_Flush.write(scratch / f"{len(flushes):05d}.arrow", pending))
            pending, held = [], 0
    if pending:
        flushes.append(_Flush.write(scratch / f"{len(flushes):05d}.arrow", pending))
    return flushes


@dataclass(frozen=True)
class _Flush:
    """One flush's rows in an Arrow IPC file (lz4; scratch, so never flushed to disk), each bucket's rows in batches of
    their own, and which batches hold which bucket.

    Not a Parquet file per bucket, appended to at every flush: an open Parquet writer keeps every row group's metadata
    until it closes (about 25 KB each), and with a row group per bucket per flush that grew with the square of the rows
    (about 100 MB at 10M rows: 167 buckets by 25 flushes). An IPC file is written whole and closed."""

    path: Path
    batches: dict[int, range]

    @classmethod
    def write(cls, path: Path, pending: list[pl.DataFrame]) -> _Flush:
        # Sorted by bucket, each bucket's rows in the order they came (history order), made plain once for the file.
        rows = pl.concat(pending).sort("_bucket", maintain_order=True)
        pending.clear()  # the caller's frames, let go before the copy below
        lengths = rows["_bucket"].rle().struct.unnest()
        schema = _plain(empty_rows()).schema
        table = _plain(rows.drop("_bucket")).cast(schema)
        del rows
        batches: dict[int, range] = {}
        with ipc.new_file(str(path), schema, options=ipc.IpcWriteOptions(compression="lz4")) as writer:
            written = offset = 0
            for length, bucket in lengths.iter_rows():
                rows_of_bucket = table.slice(offset, length).to_batches()
                for batch in rows_of_bucket:
                    writer.write_batch(batch)
                batches[bucket] = range(written, written + len(rows_of_bucket))
                written += len(rows_of_bucket)
                offset += length
        allocator.give_back_freed()
        return cls(path, batches)

    def bucket(self, bucket: int) -> pl.DataFrame | None:
        """The bucket's rows in this flush, None when it has none; read into memory (not mapped: the file goes before
        the rows do)."""
        if bucket not in self.batches:
            return None
        with pa.OSFile(str(self.path)) as source:
            reader = ipc.open_file(source)
            return pl.from_arrow(pa.Table.from_batches([reader.get_batch(i) for i in self.batches[bucket]], reader.schema))


def _plain(frame: pl.DataFrame) -> pa.Table:
    """The frame in Arrow with plain (large) strings, copied out: polars' string views would have the file keep every
    buffer they point into."""
    return frame.to_arrow(compat_level=pl.CompatLevel.oldest())
