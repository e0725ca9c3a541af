"""A Liger CSV's header row, and the columns every reader adds to the header's in its record frames."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from pipelines.core.schemas import REQUIRED_COLUMNS

PARSE_ERROR = "_parse_error"
RAW_TEXT = "_raw"
ROW_NUMBER = "row_number"
UTF8_BOM = b"\xef\xbb\xbf"
# The longest header row accepted (and read whole).
MAX_HEADER_BYTES = 1 << 20
# A huge config is a field, not an error: csv's default limit (128 KiB) would fail the row.
csv.field_size_limit(2**31 - 1)


class NotLigerCsv(ValueError):
    """The file as a whole is not a Liger CSV; the message says why."""


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
    if b"\x00" in first_line:
        raise NotLigerCsv("the header row holds NUL bytes: the file is binary, not CSV text")
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
