"""How a file lays its records out (BOM, line ends, quoting), and the text the csv writer gives a record."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

# Above this many rows written otherwise than Python's csv writer writes them, a layout keeps no more of them.
LAYOUT_MAX_LINES = 10_000


@dataclass
class RecordLayout:
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
            if has_surrogate(text):
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


def render_all(records: Iterable[Sequence[str | float | None]]) -> list[str]:
    """`render` of each record, by one writer: it hands `write` each record's text whole, one call per record (and
    writes None as the empty string, as `render` does)."""
    texts: list[str] = []
    csv.writer(_Appender(texts.append), lineterminator="\r\n").writerows(records)
    return [text.removesuffix("\r\n") for text in texts]


@dataclass(frozen=True)
class _Appender:
    write: Callable[[str], None]


def has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
