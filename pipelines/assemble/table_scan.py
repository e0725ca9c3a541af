"""Reading a table's columns batch by batch, for the checks a build is judged by: what they hold is a batch and
what they count, never the table, so judging 10M runs takes the memory judging 100k does.

The row tables are written in run_id order (tables.SORTED_BY), which lets the two checks that compare run ids
(each id once; each measured id a run) walk the ids in order instead of holding them. A file found out of order
(its writer broken, or written by hand) is judged exactly all the same, by DuckDB within a memory limit (it spills
to a scratch folder), which is slower but just as bounded.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipelines.core import allocator

# Rows read at once: of the order of a bucket of the assembly (external_sort.BUCKET_ROWS).
BATCH_ROWS = 100_000
# The largest row group read whole. The assembly writes a row group per bucket: a bucket's runs, or their three
# measurements each (about 320k rows for the largest bucket at 10M runs); a file written otherwise is read in batches.
ROW_GROUP_ROWS = 4 * BATCH_ROWS
# DuckDB's memory when it judges a file out of order: below the assembly's own peak, spilling past it.
FALLBACK_MEMORY = "500MB"


def batches(path: Path, columns: list[str]) -> Iterator[pl.DataFrame]:
    """`columns` of a Parquet file a row group at a time, or BATCH_ROWS rows at a time where a row group holds more
    than ROW_GROUP_ROWS. Row groups are read by polars: Arrow's batches converted to polars took 2.5 times as long
    (checks of a 1M-row build 1.5 s against 1.0 s, docs/performance.md)."""
    with pq.ParquetFile(path) as file:
        sizes = [file.metadata.row_group(index).num_rows for index in range(file.metadata.num_row_groups)]
        if max(sizes, default=0) > ROW_GROUP_ROWS:
            for batch in file.iter_batches(BATCH_ROWS, columns=columns):
                yield pl.DataFrame(pl.from_arrow(batch))
                allocator.give_back_freed()
            return
    scan = pl.scan_parquet(path).select(columns)
    offset = 0
    for rows in sizes:
        # A slice that is one row group reads that row group alone.
        yield scan.slice(offset, rows).collect()
        offset += rows
        allocator.give_back_freed()


@dataclass
class IdWalk:
    """Ids seen in order, batch after batch: whether they stayed in order and, when `counting`, the ids that repeat
    (how many, a few named). Repeats of a sorted column are next to each other, so the last id is all it keeps."""

    counting: bool = True
    in_order: bool = True
    repeated: int = 0
    examples: list[str] = field(default_factory=list)
    _last: str | None = None
    _last_repeated: str | None = None

    def add(self, ids: pl.Series) -> bool:
        """Take the next ids; False (and in_order False) once they are out of order, when nothing more is counted."""
        ids = ids.drop_nulls()
        if ids.is_empty():
            return self.in_order
        if not ids.is_sorted() or (self._last is not None and ids[0] < self._last):
            self.in_order = False
            return False
        if self.counting:
            self._count(ids)
        self._last = ids[-1]
        return True

    def _count(self, ids: pl.Series) -> None:
        again = ids.filter(ids == ids.shift(1, fill_value=self._last)).unique(maintain_order=True)
        if again.len() and again[0] == self._last_repeated:
            again = again.slice(1)  # counted with the batch before
        self.repeated += again.len()
        self.examples.extend(again.head(5 - len(self.examples)).to_list())
        if again.len():
            self._last_repeated = again[-1]


def repeated_ids(path: Path, column: str) -> tuple[int, list[str]] | None:
    """The ids of `column` that appear more than once (how many, a few named) in one ordered pass; None when the
    file is out of order."""
    walk = IdWalk()
    for frame in batches(path, [column]):
        if not walk.add(frame[column]):
            return None
    return walk.repeated, walk.examples


def missing_ids(path: Path, column: str, reference: Path, reference_column: str) -> int | None:
    """How many distinct ids of `column` are not among `reference_column`'s, both files walked in order side by side;
    None when either is out of order. Held at once: a batch of each, and the ids of a batch that wait for the
    reference to reach them."""
    walk, reference_walk = IdWalk(counting=False), IdWalk(counting=False)
    missing, last_missing = 0, None
    known = batches(reference, [reference_column])
    window = pl.DataFrame(schema={"id": pl.String})  # the reference's batch the ids have reached, sorted
    exhausted = False
    for frame in batches(path, [column]):
        if not walk.add(frame[column]):
            return None
        # A run's rows are next to each other (three measurements each): one of each is enough to judge.
        pending = frame.select(pl.col(column).alias("id")).drop_nulls().filter(pl.col("id").ne_missing(pl.col("id").shift(1)))
        while pending.height:
            # Past the reference's end every id is reached; before its first batch, none.
            reached = pl.lit(exhausted) if exhausted or not window.height else pl.col("id") <= window["id"][-1]
            absent = pending.filter(reached).join(window, on="id", how="anti", maintain_order="left")["id"]
            if absent.len():
                # Each id counted once, however many rows carry it (they are next to each other, maybe across batches).
                missing += absent.n_unique() - (absent[0] == last_missing)
                last_missing = absent[-1]
            pending = pending.filter(~reached)
            if pending.height:
                batch = next(known, None)
                if batch is None:
                    exhausted, window = True, window.clear()
                elif not reference_walk.add(batch[reference_column]):
                    return None
                else:
                    window = batch.select(pl.col(reference_column).alias("id")).drop_nulls()
    # The rest of the reference is read, never held: a tail out of order must not pass unseen.
    for batch in known:
        if not reference_walk.add(batch[reference_column]):
            return None
    return missing


def duckdb_count(sql: str, files: dict[str, Path]) -> list[tuple]:
    """Rows of `sql` over Parquet files named as views (`files`), in DuckDB within FALLBACK_MEMORY, spilling to a
    scratch folder that is gone afterwards."""
    # Imported here: a build whose files are in order (every build the assembly writes) never needs DuckDB, and the
    # import is a tenth of a second of every normalization.
    import duckdb

    with tempfile.TemporaryDirectory(prefix="liger-check-") as scratch:
        config = {"memory_limit": FALLBACK_MEMORY, "temp_directory": scratch, "threads": 2}
        with duckdb.connect(config=config) as con:
            for name, path in files.items():
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{_quoted(path)}')")
            return con.execute(sql).fetchall()


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
