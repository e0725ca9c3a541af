"""Staging a generated file as a snapshot and assembling the tables, and the checks of SPEC section 5
(nothing is lost) that the property tests hold the result to: each row accepted once or quarantined
once with a reason, every character of the input in an accepted field or a quarantined row, the
contract checks passed, and the fast reader giving the very records the careful one gives."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipelines.assemble import assembly as tables
from pipelines.assemble import checks
from pipelines.core import layout
from pipelines.core.schemas import AS_WRITTEN, QUARANTINE, RUN_ROWS
from pipelines.ingest import staging
from pipelines.ingest.normalize.distinct_cache import DistinctCache
from pipelines.ingest.parse.fast import FastPathRefused
from pipelines.ingest.parse.header import read_header
from pipelines.ingest.parse.records import iter_records
from pipelines.ingest.source.listing import SnapshotRef
from pipelines.storage import store

# Fields of an accepted row as the normalizer keeps them verbatim, by CSV column.
RAW_FIELD = AS_WRITTEN
NOT_CONTENT = str.maketrans("", "", ',"\r\n')


def scratch() -> tempfile.TemporaryDirectory:
    """A throwaway warehouse folder, in memory when the machine has /dev/shm: examples fsync a lot."""
    return tempfile.TemporaryDirectory(dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)


def stage(warehouse: Path, data: bytes, snapshot: str = "c1", sequence: int = 1) -> staging.SnapshotMeta:
    ref = SnapshotRef(
        f"{snapshot}/all_benchmark_data.csv",
        "generated",
        "benchmark/data/all_benchmark_data.csv",
        snapshot,
        datetime(2025, 1, sequence, tzinfo=UTC),
        "generated",
        sequence,
    )
    return staging.stage_snapshot(warehouse, ref, lambda _ref: data, DistinctCache(), ingest_seq=1)


def staged(warehouse: Path, meta: staging.SnapshotMeta, prefix: str) -> pl.DataFrame:
    folder = layout.Layout(warehouse).staged(meta.snapshot_id)
    return pl.read_parquet(sorted(folder.glob(f"{prefix}-*.parquet")), schema=RUN_ROWS if prefix == "rows" else QUARANTINE)


def assemble_and_check(warehouse: Path, quantiles_ordered: bool = True) -> dict[str, pl.DataFrame]:
    """Assemble and commit the tables, then hold them to SPEC section 5 and the contract checks
    (quantile order too, unless the input's y values may come in any order)."""
    frames = tables.assemble(warehouse, None)
    # Written as plain files, not a published build: the oracle judges tables the blocking checks may refuse.
    for name, frame in frames.items():
        store.write_parquet(frame, warehouse / f"{name}.parquet")
    snaps, mapped, held = frames["snapshots"], frames["run_snapshots"], frames["quarantine"]
    for snap in snaps.iter_rows(named=True):
        assert snap["row_count"] == snap["accepted"] + snap["quarantined"]
        numbers = mapped.filter(pl.col("snapshot_id") == snap["snapshot_id"])["row_number"].to_list()
        numbers += held.filter(pl.col("snapshot_id") == snap["snapshot_id"])["row_number"].to_list()
        assert sorted(numbers) == list(range(1, snap["row_count"] + 1)), "each row is accepted once or quarantined once"
    assert mapped["run_id"].is_in(frames["runs"]["run_id"].implode()).all(), "every accepted row maps to a run"
    assert_reasons(held)
    for check in (checks.run_ids_unique, checks.references_exist, *([checks.quantiles_ordered] if quantiles_ordered else [])):
        outcome = check(warehouse)
        assert outcome.passed, outcome.description
    # A rejected snapshot's rows are accounted too (quarantined): the blocking check passes, a warning names it.
    assert checks.snapshot_accounting(warehouse).passed
    rejected = snaps.filter(pl.col("status") == "rejected")["snapshot_id"].to_list()
    warning = checks.snapshots_rejected(warehouse)
    assert warning.passed == (not rejected) and all(snapshot_id in warning.description for snapshot_id in rejected[: checks.NAMED])
    return frames


def assert_reasons(quarantine: pl.DataFrame) -> None:
    blank = quarantine.filter(pl.col("reason").is_null() | (pl.col("reason").str.strip_chars() == ""))
    assert blank.is_empty(), f"quarantine rows without a reason: {blank.rows()[:3]}"


def readable(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def content_chars(text: str) -> Counter[str]:
    """The characters of some CSV text that are not separators or quotes: what no parse may lose."""
    return Counter(text.translate(NOT_CONTENT))


def conserved(data: bytes, accepted: pl.DataFrame, quarantine: pl.DataFrame, columns: list[str]) -> None:
    """Every character of the data rows is in an accepted row's fields or a quarantine row's text."""
    body = data.removeprefix(b"\xef\xbb\xbf")
    cut = min((i for i in (body.find(b"\n"), body.find(b"\r")) if i >= 0), default=len(body))
    expected = content_chars(readable(body[cut:]))
    found: Counter[str] = Counter()
    for raw in quarantine["raw"]:
        found += content_chars(raw)
    for row in accepted.iter_rows(named=True):
        for column in columns:
            if column in RAW_FIELD:
                found += content_chars(row[RAW_FIELD[column]] or "")
        for value in json.loads(row["extra_columns"] or "{}").values():
            found += content_chars(value)
    assert found == expected, f"lost {expected - found}, invented {found - expected}"


def readers_agree(data: bytes) -> None:
    """The fast reader, when it takes a file, gives the very records the careful one gives."""
    try:
        header = read_header(data)
    except ValueError:
        return
    try:
        fast = pl.concat(list(iter_records(data, header)), how="vertical_relaxed")
    except (FastPathRefused, ValueError):
        return
    careful = pl.concat(list(iter_records(data, header, careful=True)), how="vertical_relaxed")
    assert fast.equals(careful), "the fast and careful readers disagree"
