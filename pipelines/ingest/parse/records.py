"""Split a Liger CSV into records: text columns exactly as written, plus rows that cannot be records.

Two readers give the same records. The fast one (Arrow's CSV reader, one
block of lines at a time) handles well-formed files in bounded batches; the first row it
cannot take whole (wrong field count, a newline inside quotes, invalid
UTF-8) sends the file to the careful one (Python's csv module), which puts
each such row in quarantine with its text instead of repairing it. Arrow
quietly repairs broken quoting (text after a closing quote, a quote left
open), so a file that shows signs of it goes to the careful reader too.

The readers are `fast` and `careful`; `header` reads the header
row, and `record_layout` keeps what a file holds beyond its records' fields.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from pipelines.ingest.parse.careful import careful_records
from pipelines.ingest.parse.fast import fast_records
from pipelines.ingest.parse.header import Header
from pipelines.ingest.parse.record_layout import RecordLayout


def iter_records(data: bytes | Path, header: Header, careful: bool = False, layout: RecordLayout | None = None) -> Iterator[pl.DataFrame]:
    """Frames of records, in file order: one String column per header column, `row_number`
    (1-based, the header not counted, blank lines skipped), `_parse_error` and `_raw`
    (set only on rows that could not be split into the header's fields).

    The fast reader raises FastPathRefused, possibly after yielding some frames: the
    caller drops what it got from this file and reads it again with careful=True (and a new `layout`).
    Once every frame is taken, `layout` says how the file lays its records out (see RecordLayout); the fast
    reader takes only files whose rows are written as the writer writes them, save the BOM and the end.
    """
    layout = layout if layout is not None else RecordLayout()
    yield from (careful_records(data, header, layout) if careful else fast_records(data, header, layout))
