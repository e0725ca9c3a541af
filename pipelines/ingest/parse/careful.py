"""The careful reader: Python's csv module, row by row, which quarantines each row it cannot split with its text."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from pipelines.ingest.parse.header import PARSE_ERROR, RAW_TEXT, ROW_NUMBER, UTF8_BOM, Header
from pipelines.ingest.parse.record_layout import RecordLayout, has_surrogate, render

CAREFUL_BATCH_ROWS = 100_000
_LINE_ENDS = ("\r\n", "\n", "\r")


def _split_line_end(text: str) -> tuple[str, str]:
    for end in _LINE_ENDS:
        if text.endswith(end):
            return text[: -len(end)], end
    return text, ""


class _Lines:
    """The lines csv.reader takes, remembered since `mark()`: the verbatim text of one record."""

    def __init__(self, text: str):
        self._lines = io.StringIO(text, newline="")
        self.taken: list[str] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.taken.append(line)
        return line

    def mark(self) -> None:
        self.taken = []

    def text(self) -> str:
        return _printable("".join(self.taken).rstrip("\r\n"))


def careful_records(data: bytes | Path, header: Header, layout: RecordLayout) -> Iterator[pl.DataFrame]:
    raw = data.read_bytes() if isinstance(data, Path) else data
    layout.bom = raw.startswith(UTF8_BOM)
    text = raw.removeprefix(UTF8_BOM).decode("utf-8", errors="surrogateescape")
    lines = _Lines(text)
    # strict: text after a closing quote or a quote open at the end is an error, not a repaired field.
    reader = csv.reader(lines, strict=True)
    width = len(header.columns)
    rows: list[tuple[int, list[str] | None, str | None, str | None]] = []
    row_number = 0
    next(reader, None)
    header_text, header_end = _taken(lines)
    layout.line_end = header_end if header_end in ("\r\n", "\n") else "\r\n"
    layout.record(0, header_text, render(header.columns), header_end)
    while True:
        lines.mark()
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            if not lines.taken:
                break
            row_number += 1
            rows.append((row_number, None, f"the row's quoting is broken, so it cannot be split into fields ({exc})", lines.text()))
            exact, separator = _taken(lines)
            layout.record(row_number, exact, lines.text(), separator)
            continue
        if not fields:
            layout.extend_separator(row_number, "".join(lines.taken))
            continue
        row_number += 1
        rows.append(_checked(row_number, fields, width, lines.text()))
        exact, separator = _taken(lines)
        layout.record(row_number, exact, rows[-1][3] if rows[-1][3] is not None else render(fields), separator)
        if len(rows) >= CAREFUL_BATCH_ROWS:
            yield _frame(rows, header)
            rows = []
    if rows:
        yield _frame(rows, header)


def _taken(lines: _Lines) -> tuple[str, str]:
    """The exact text of the record just read (surrogates for bytes that are not UTF-8) and its line end."""
    return _split_line_end("".join(lines.taken))


def _printable(text: str) -> str:
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _checked(row_number: int, fields: list[str], width: int, line: str) -> tuple[int, list[str] | None, str | None, str | None]:
    if len(fields) != width:
        return row_number, None, f"the row has {len(fields)} fields where the header has {width}", line
    if any(has_surrogate(f) for f in fields):
        return row_number, None, "the row is not valid UTF-8", line
    return row_number, fields, None, None


def _frame(rows: list[tuple[int, list[str] | None, str | None, str | None]], header: Header) -> pl.DataFrame:
    width = len(header.columns)
    columns: list[list[str | None]] = [[] for _ in range(width)]
    for _, fields, _, _ in rows:
        for index in range(width):
            columns[index].append(fields[index] if fields is not None else None)
    data: dict[str, pl.Series] = {name: pl.Series(name, values, dtype=pl.String) for name, values in zip(header.columns, columns)}
    data[ROW_NUMBER] = pl.Series(ROW_NUMBER, [r[0] for r in rows], dtype=pl.Int64)
    data[PARSE_ERROR] = pl.Series(PARSE_ERROR, [r[2] for r in rows], dtype=pl.String)
    data[RAW_TEXT] = pl.Series(RAW_TEXT, [r[3] for r in rows], dtype=pl.String)
    return pl.DataFrame(data)
