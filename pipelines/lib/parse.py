"""Split a Liger CSV into records: text columns exactly as written, plus rows that cannot be records.

Two readers give the same records. The fast one (Arrow's CSV reader, one
block of lines at a time) handles well-formed files in bounded batches; the first row it
cannot take whole (wrong field count, a newline inside quotes, invalid
UTF-8) sends the file to the careful one (Python's csv module), which puts
each such row in quarantine with its text instead of repairing it. Arrow
quietly repairs broken quoting (text after a closing quote, a quote left
open), so a file that shows signs of it goes to the careful reader too.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from pipelines.lib.schemas import REQUIRED_COLUMNS

BATCH_BYTES = 16 << 20
CAREFUL_BATCH_ROWS = 100_000
PARSE_ERROR = "_parse_error"
RAW_TEXT = "_raw"
ROW_NUMBER = "row_number"
UTF8_BOM = b"\xef\xbb\xbf"
# The longest header row accepted (and read whole).
MAX_HEADER_BYTES = 1 << 20
# A quote with text right after it where only a separator may follow (`"abc"x`, `""x`), or a bare quote.
_SUSPECT_QUOTE = re.compile(rb'[^",\r\n](?:"")*"[^",\r\n]|(?:^|[,\r\n])(?:"")+[^",\r\n]')
_SUSPECT_QUOTE_TEXT = _SUSPECT_QUOTE.pattern.decode()
# A huge config is a field, not an error: csv's default limit (128 KiB) would fail the row.
csv.field_size_limit(2**31 - 1)


class NotLigerCsv(ValueError):
    """The file as a whole is not a Liger CSV; the message says why."""


class FastPathRefused(Exception):
    """The fast reader met a row it cannot take whole; read the file with careful=True."""


# Above this many rows written otherwise than Python's csv writer writes them, a layout keeps no more of them.
LAYOUT_MAX_LINES = 10_000
_LINE_ENDS = ("\r\n", "\n", "\r")


@dataclass
class Layout:
    """What a file holds beyond its records' fields, so that it can be rebuilt byte for byte.

    The file is its BOM (if any), then for each record k (0 the header, then the row numbers): its text,
    then its separator. A record's text is what Python's csv writer writes for its fields (excel dialect,
    minimal quoting), or for a row that cannot be split, its raw text; `lines` holds the text of the
    records written otherwise (quoted where the writer would not quote, say). A separator is `line_end`
    unless `after` says otherwise: blank lines after a record, another line ending, nothing after the
    last record. `inexact` says why the file cannot be rebuilt, when it cannot."""

    bom: bool = False
    line_end: str = "\r\n"
    after: dict[int, str] = field(default_factory=dict)
    lines: dict[int, str] = field(default_factory=dict)
    inexact: str | None = None

    last_record: int = 0

    @property
    def final_newline(self) -> bool:
        return self.after.get(self.last_record, self.line_end).endswith(("\n", "\r"))

    def record(self, position: int, text: str, expected: str, separator: str) -> None:
        """Record k's exact text and separator, against the text its fields give."""
        if text != expected:
            if _has_surrogate(text):
                self.inexact = self.inexact or (
                    f"row {position} is not valid UTF-8: quarantine.raw holds it with replacement characters, not its bytes"
                )
            elif len(self.lines) >= LAYOUT_MAX_LINES:
                self.inexact = self.inexact or (
                    f"more than {LAYOUT_MAX_LINES} rows are quoted otherwise than Python's csv writer quotes them: only "
                    f"the first {LAYOUT_MAX_LINES} are kept"
                )
            else:
                self.lines[position] = text
        if separator != self.line_end:
            self.after[position] = separator
        self.last_record = position

    def extend_separator(self, position: int, text: str) -> None:
        """Lines that are no records (blank lines) after record k."""
        self.after[position] = self.after.get(position, self.line_end) + text

    def as_json(self) -> dict:
        """The exceptions only (JSON keys are text); empty when the file is written as the writer writes it."""
        out: dict = {}
        if self.after:
            out["after"] = {str(k): v for k, v in sorted(self.after.items())}
        if self.lines:
            out["lines"] = {str(k): v for k, v in sorted(self.lines.items())}
        if self.inexact:
            out["inexact"] = self.inexact
        return out


def render(fields: list[str] | tuple[str, ...]) -> str:
    """A record's text as upstream's csv writer writes it (without the line end). The line end given
    to the writer matters: it quotes a field holding a line break only when the break is in it."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(["" if f is None else f for f in fields])
    return buffer.getvalue().removesuffix("\r\n")


def _split_line_end(text: str) -> tuple[str, str]:
    for end in _LINE_ENDS:
        if text.endswith(end):
            return text[: -len(end)], end
    return text, ""


@dataclass(frozen=True)
class Header:
    columns: tuple[str, ...]

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(c for c in REQUIRED_COLUMNS if c not in self.columns)


def _head(data: bytes | Path) -> bytes:
    """The file's start, long enough to hold a header row of MAX_HEADER_BYTES and its line break."""
    size = len(UTF8_BOM) + MAX_HEADER_BYTES + 1
    if isinstance(data, Path):
        with open(data, "rb") as handle:
            return handle.read(size)
    return data[:size]


def read_header(data: bytes | Path) -> Header:
    """The column names of the first record; NotLigerCsv for an empty file or a broken header.

    The header row is read whole; one longer than MAX_HEADER_BYTES is refused rather than cut, since a
    cut header would name a column the file does not have."""
    head = _head(data).removeprefix(UTF8_BOM)
    if not head.strip():
        raise NotLigerCsv("the file is empty: no header row")
    first_line = head.splitlines()[0] if head.splitlines() else b""
    if len(first_line) > MAX_HEADER_BYTES:
        raise NotLigerCsv(f"the header row is longer than {MAX_HEADER_BYTES} bytes: no Liger CSV has one so long")
    try:
        text = first_line.decode("utf-8")
    except UnicodeDecodeError:
        raise NotLigerCsv("the header row is not valid UTF-8") from None
    try:
        columns = tuple(next(csv.reader([text], strict=True)))
    except csv.Error as exc:
        raise NotLigerCsv(f"the header row's quoting is broken ({exc})") from None
    if not columns:
        raise NotLigerCsv("the header row is empty: the file does not start with column names")
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        raise NotLigerCsv(f"the header names column(s) {', '.join(duplicated)} more than once")
    if "" in columns:
        raise NotLigerCsv("the header has an unnamed column")
    return Header(columns)


def iter_records(data: bytes | Path, header: Header, careful: bool = False, layout: Layout | None = None) -> Iterator[pl.DataFrame]:
    """Frames of records, in file order: one String column per header column, `row_number`
    (1-based, the header not counted, blank lines skipped), `_parse_error` and `_raw`
    (set only on rows that could not be split into the header's fields).

    The fast reader raises FastPathRefused, possibly after yielding some frames: the
    caller drops what it got from this file and reads it again with careful=True (and a new `layout`).
    Once every frame is taken, `layout` says how the file lays its records out (see Layout); the fast
    reader takes only files whose rows are written as the writer writes them, save the BOM and the end.
    """
    layout = layout if layout is not None else Layout()
    yield from (_careful_records(data, header, layout) if careful else _fast_records(data, header, layout))


def _fast_records(data: bytes | Path, header: Header, layout: Layout) -> Iterator[pl.DataFrame]:
    # Block by block (each ends at a line feed): the file is read once and never held whole, each block is
    # checked for suspect quoting before Arrow parses it (in parallel within the block), and the odd-quote
    # check, which needs the whole file, refuses it after its last block.
    next_row = 1
    quotes = 0
    tail = _file_tail(data)
    for index, (block, last) in enumerate(_last_flagged(_line_blocks(data))):
        quotes += block.count(b'"')
        if _suspect_block(block):
            raise FastPathRefused()
        if index == 0:
            block = _take_header_layout(block, header, layout)
        table = _parse_block(block, header, first=index == 0)
        _check_block_layout(block, table, layout, tail if last else None, index == 0)
        if table.num_rows == 0:
            continue
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        yield frame.with_columns(
            pl.int_range(next_row, next_row + frame.height, dtype=pl.Int64).alias(ROW_NUMBER),
            pl.lit(None, pl.String).alias(PARSE_ERROR),
            pl.lit(None, pl.String).alias(RAW_TEXT),
        )
        next_row += frame.height
    if quotes % 2 == 1:
        raise FastPathRefused()
    layout.last_record = next_row - 1
    if tail != layout.line_end:
        layout.after[layout.last_record] = tail


def _last_flagged(blocks: Iterator[bytes]) -> Iterator[tuple[bytes, bool]]:
    previous = None
    for block in blocks:
        if previous is not None:
            yield previous, False
        previous = block
    if previous is not None:
        yield previous, True


def _file_tail(data: bytes | Path, size: int = 1 << 12) -> str:
    """The line breaks that end the file: the separator after its last record (blank lines included)."""
    if isinstance(data, Path):
        with open(data, "rb") as handle:
            handle.seek(max(0, handle.seek(0, io.SEEK_END) - size))
            end = handle.read()
    else:
        end = data[-size:]
    return (end[len(end.rstrip(b"\r\n")) :]).decode()


def _take_header_layout(block: bytes, header: Header, layout: Layout) -> bytes:
    """The first block without its BOM; the header line must be written as the writer writes it, and its
    line end (CRLF or LF) is the file's."""
    if block.startswith(UTF8_BOM):
        layout.bom = True
        block = block[len(UTF8_BOM) :]
    expected = render(header.columns).encode()
    for end in ("\r\n", "\n"):
        if block.startswith(expected + end.encode()):
            layout.line_end = end
            return block
    raise FastPathRefused()


def _check_block_layout(block: bytes, table: pa.Table, layout: Layout, tail: str | None, first: bool) -> None:
    """Refuse a block whose bytes are not its records as the writer writes them, each followed by the file's
    line end (`tail` ends the last block instead): blank lines, another line end, other quoting."""
    end = layout.line_end.encode()
    if tail is not None:
        ending = tail.encode()
        if not block.endswith(ending) or len(block) == len(ending):
            raise FastPathRefused()
        block = block[: len(block) - len(ending)] + end
    header_line = render(table.schema.names).encode() + end if first else b""
    if block != header_line + _rendered_block(table, end):
        raise FastPathRefused()


def _rendered_block(table: pa.Table, end: bytes) -> bytes:
    """Every row as Python's csv writer writes it, each followed by `end`, in one piece. Vectorized: a field
    is quoted, its quotes doubled, when it holds a separator or a quote (the fast reader takes no line break
    in a field); a column whose text holds neither (a byte search) is taken as it is."""
    if table.num_rows == 0:
        return b""
    columns = []
    for column in table.columns:
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if _text_holds(column, (b",", b'"')):
            special = pc.match_substring_regex(column, r'[,"]')
            quoted = pc.binary_join_element_wise('"', pc.replace_substring(column, '"', '""'), '"', "")
            column = pc.if_else(special, quoted, column)
        columns.append(pc.cast(column, pa.large_binary()))
    binary = pa.large_binary()
    lines = pc.binary_join_element_wise(*columns, pa.scalar(b",", binary))
    lines = pc.binary_join_element_wise(lines, pa.scalar(end, binary), pa.scalar(b"", binary))
    return _text(lines)


def _text(column: pa.Array) -> bytes:
    """A string or binary array's values end to end: its text buffer between the first and last offsets."""
    _, offsets, data = column.buffers()
    width = "q" if pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type) else "i"
    bounds = memoryview(offsets).cast(width)[column.offset : column.offset + len(column) + 1 : len(column) or 1]
    return memoryview(data)[bounds[0] : bounds[-1]].tobytes() if data is not None else b""


def _text_holds(column: pa.Array, needles: tuple[bytes, ...]) -> bool:
    text = _text(column)
    return any(needle in text for needle in needles)


def _parse_block(block: bytes, header: Header, first: bool) -> pa.Table:
    """One block's records; the first block begins with the header, the others are all records."""
    read_options = pacsv.ReadOptions(use_threads=True, column_names=None if first else list(header.columns))
    # No invalid_row_handler: a row of the wrong width is an error (a handler would get it decoded, and fail on invalid UTF-8).
    parse_options = pacsv.ParseOptions(newlines_in_values=False)
    convert_options = pacsv.ConvertOptions(
        column_types={c: pa.string() for c in header.columns},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    try:
        table = pacsv.read_csv(
            pa.BufferReader(block), read_options=read_options, parse_options=parse_options, convert_options=convert_options
        )
    except (pa.ArrowInvalid, pa.ArrowException, UnicodeDecodeError):
        raise FastPathRefused() from None
    if tuple(table.schema.names) != header.columns:
        raise FastPathRefused()
    # Arrow takes a quote left open as a field that runs across lines; such a row needs the careful reader.
    if any(_has_line_break(batch) for batch in table.to_batches()):
        raise FastPathRefused()
    return table


def _has_line_break(batch: pa.RecordBatch) -> bool:
    """Whether any value holds a line break: a byte search in each column's text buffer, which holds the
    batch's values end to end (the bytes between its first and last offsets)."""
    for column in batch.columns:
        _, offsets, data = column.buffers()
        width = "q" if pa.types.is_large_string(column.type) else "i"
        bounds = memoryview(offsets).cast(width)[column.offset : column.offset + len(column) + 1 : len(column) or 1]
        text = memoryview(data)[bounds[0] : bounds[-1]].tobytes() if data is not None else b""
        if b"\n" in text or b"\r" in text:
            return True
    return False


def _suspect_block(block: bytes) -> bool:
    # RE2 (Arrow's regex engine) scans this pattern ~45x faster than re and ~1.5x faster than polars' (Rust)
    # engine. A match never spans a line break except as its first character, which `^` (the text's start
    # in both) stands for at a block start; undecodable bytes become U+FFFD, which the pattern treats like
    # any other character that is not a separator.
    text = pa.array([block.decode("utf-8", errors="replace")], pa.large_string())
    return bool(pc.match_substring_regex(text, _SUSPECT_QUOTE_TEXT)[0].as_py())


def _line_blocks(data: bytes | Path) -> Iterator[bytes]:
    """The data in pieces of about BATCH_BYTES, each ending right after a line feed (the last one at the end)."""
    with open(data, "rb") if isinstance(data, Path) else io.BytesIO(data) as handle:
        carry = b""
        while chunk := handle.read(BATCH_BYTES):
            chunk = carry + chunk
            cut = chunk.rfind(b"\n") + 1
            carry = chunk[cut:]
            if cut:
                yield chunk[:cut]
        if carry:
            yield carry


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


def _careful_records(data: bytes | Path, header: Header, layout: Layout) -> Iterator[pl.DataFrame]:
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
    if any(_has_surrogate(f) for f in fields):
        return row_number, None, "the row is not valid UTF-8", line
    return row_number, fields, None, None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


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
