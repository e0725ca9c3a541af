"""The external sort's bucket bounds come from every n-th run id of the sampled parts taken end to end, read one part
at a time (external_sort.bucket_bounds): the sample must be the one a single pass over all of them takes, whatever
the parts' lengths, so that the buckets (and the tables' row groups) do not depend on how the parts were cut."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from pipelines.assemble import external_sort
from pipelines.core import schemas


def _part(folder: Path, index: int, ids: list[str]) -> external_sort.StagedPart:
    path = folder / f"rows-{index:05d}.parquet"
    frame = pl.DataFrame({"run_id": ids, "row_number": range(1, len(ids) + 1)}).with_columns(
        pl.lit(None).alias(c) for c in schemas.RUN_ROWS if c not in ("run_id", "row_number")
    )
    frame.select(schemas.RUN_ROWS.names()).cast(schemas.RUN_ROWS).write_parquet(path)
    return external_sort.StagedPart(path, "s", 0, True)


def _bounds_of_one_pass(ids: list[list[str]], rows: int, every: int) -> list[str]:
    sample = pl.Series([i for part in ids for i in part]).gather_every(every).sort()
    buckets = -(-rows // external_sort.BUCKET_ROWS)
    return sorted({sample[len(sample) * i // buckets] for i in range(1, buckets)})


@pytest.mark.parametrize("lengths", [[7, 7, 7, 7], [1, 13, 2, 9, 30, 4], [50]])
def test_the_sample_is_every_nth_id_of_the_parts_end_to_end(tmp_path, monkeypatch, lengths):
    monkeypatch.setattr(external_sort, "BUCKET_ROWS", 10)
    monkeypatch.setattr(external_sort, "SAMPLES_PER_BUCKET", 1)
    rng = random.Random(len(lengths))
    ids = [[f"run-{rng.randrange(10**6):06d}" for _ in range(n)] for n in lengths]
    parts = [_part(tmp_path, index, part) for index, part in enumerate(ids)]
    rows = sum(lengths)
    # Every part is sampled (fewer than SAMPLED_PARTS), one id in `every` (9 or 10 here): most parts start between two.
    every = rows // -(-rows // external_sort.BUCKET_ROWS)
    assert external_sort.bucket_bounds(parts, rows) == _bounds_of_one_pass(ids, rows, every)
