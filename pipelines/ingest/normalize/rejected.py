"""A snapshot rejected whole keeps its rows accounted (SPEC section 5): each is a quarantine row naming why the file
was refused, so `row_count = accepted + quarantined` holds for it too and the rest of the history is built.

A file whose header reads but lacks a required column is still split into CSV records (`rejected_rows`); a file
with no usable header is split into lines (`write_refused_parts`, parse_refused)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.core import layout as warehouse_layout
from pipelines.core.schemas import QUARANTINE
from pipelines.ingest.normalize.quarantine import raw_line
from pipelines.ingest.parse.header import RAW_TEXT, ROW_NUMBER, Header
from pipelines.ingest.parse.record_layout import RecordLayout
from pipelines.ingest.parse.refused import refused_lines
from pipelines.storage import store


def rejected_rows(records: pl.DataFrame, header: Header, snapshot_id: str, reason: str) -> pl.DataFrame:
    """The quarantine rows of a chunk of records of a file rejected for its header's columns."""
    raws = [raw_line(fields, raw) for fields, raw in zip(records.select(header.columns).iter_rows(), records[RAW_TEXT])]
    return _quarantine(records[ROW_NUMBER], pl.Series(RAW_TEXT, raws, dtype=pl.String), snapshot_id, reason)


def write_refused_parts(data: bytes | Path, snapshot_id: str, folder: Path, reason: str, layout: RecordLayout) -> tuple[int, int, int]:
    """Quarantine every line of a file with no usable header into folder/quarantine-N.parquet; (rows, 0, quarantined)."""
    rows = 0
    for index, lines in enumerate(refused_lines(data, layout)):
        frame = _quarantine(lines[ROW_NUMBER], lines[RAW_TEXT], snapshot_id, reason)
        store.write_parquet(frame, folder / warehouse_layout.part_file("quarantine", index), compression_level=1, statistics=False)
        rows += frame.height
    return rows, 0, rows


def _quarantine(row_numbers: pl.Series, raws: pl.Series, snapshot_id: str, reason: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "snapshot_id": pl.Series([snapshot_id] * len(row_numbers), dtype=pl.String),
            "row_number": row_numbers,
            "raw": raws,
            "reason": pl.Series([reason] * len(row_numbers), dtype=pl.String),
        },
        schema=QUARANTINE,
    )
