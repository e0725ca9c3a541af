"""The lines of a file refused whole (no usable header: empty, not text, duplicate or unnamed columns, broken header
quoting): its first line stands for the header, and every other line that is not blank is one row, kept as its text.

Nothing of such a file is read as fields, so its rows are lines, not CSV records (a quoted line break is two rows);
its layout still rebuilds it byte for byte when it is UTF-8 text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from pipelines.ingest.parse.header import RAW_TEXT, ROW_NUMBER, UTF8_BOM
from pipelines.ingest.parse.record_layout import RecordLayout, has_surrogate

REFUSED_BATCH_ROWS = 100_000
_LINE = re.compile(r"([^\r\n]*)(\r\n|\n|\r|$)")
NOT_UTF8 = "the file is not UTF-8 text: quarantine.raw holds its lines with replacement characters, not its bytes"


def refused_lines(data: bytes | Path, layout: RecordLayout) -> Iterator[pl.DataFrame]:
    """Frames of (`row_number`, `_raw`), in file order: each line after the first that is not empty."""
    raw = data.read_bytes() if isinstance(data, Path) else data
    layout.bom = raw.startswith(UTF8_BOM)
    text = raw.removeprefix(UTF8_BOM).decode("utf-8", errors="surrogateescape")
    if has_surrogate(text):
        layout.inexact = NOT_UTF8
    numbers: list[int] = []
    texts: list[str] = []
    row_number = 0
    for index, match in enumerate(_LINE.finditer(text)):
        line, end = match.group(1), match.group(2)
        if index == 0:
            # The header line: its own text is what the rebuild writes first (the snapshot has no column names).
            layout.line_end = end if end in ("\r\n", "\n") else "\r\n"
            layout.record(0, line, "", end)
        elif not line:
            if end:
                layout.extend_separator(row_number, end)
            continue
        else:
            row_number += 1
            # The row is rebuilt from its raw text as it is: only its separator is layout.
            layout.record(row_number, line, line, end)
            numbers.append(row_number)
            texts.append(_printable(line))
        if len(numbers) >= REFUSED_BATCH_ROWS:
            yield _frame(numbers, texts)
            numbers, texts = [], []
        if not end:
            break
    if numbers:
        yield _frame(numbers, texts)


def _printable(text: str) -> str:
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _frame(numbers: list[int], texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({ROW_NUMBER: numbers, RAW_TEXT: texts}, schema={ROW_NUMBER: pl.Int64, RAW_TEXT: pl.String})
