"""Plain descriptions of tables for asset metadata and the command line: column schemas, markdown previews and
tables, and a value as a person reads it (`format_cell`).

The Dagster instance keeps every materialization's metadata for good, so every value that
comes from the data is bounded here: a field of megabytes must not be stored again on each run.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import polars as pl

from pipelines.core import display

CELL_MAX = 60  # a cell of a markdown preview
JSON_TEXT_MAX = 500  # a string inside JSON metadata
JSON_ITEMS_MAX = 50  # the items of a list or mapping inside JSON metadata
NULL_TEXT = "NULL"  # a null in the CLI's aligned tables; markdown cells leave it empty


def column_types(schema: pl.Schema) -> list[tuple[str, str]]:
    return [(name, str(dtype)) for name, dtype in schema.items()]


def format_cell(value: Any, null: str = NULL_TEXT) -> str:
    """A value as a person reads it: floats to 6 significant digits, whole numbers whole."""
    if value is None:
        return null
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        # Large ns and byte counts would turn to exponents under %g.
        return f"{value:.1f}" if abs(value) >= 1e6 else f"{value:.6g}"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_cell(item, null) for item in value) + "]"
    return str(value)


def markdown_preview(frame: pl.DataFrame, columns: list[str] | None = None, rows: int = 5) -> str:
    """A small markdown table; long cells are cut so the preview stays readable."""
    shown = frame.select(columns or frame.columns[:6]).head(rows)
    if shown.is_empty():
        return "_(no rows)_"
    return markdown_table(shown.columns, shown.iter_rows())


def markdown_table(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], cell: Callable[[Any], str] | None = None, width: int | None = CELL_MAX
) -> str:
    """A markdown table of `rows`, each value written by `cell` (`str`, None as empty) and cut to `width`
    (None: kept whole). The one markdown renderer: metadata previews, the CLI's `--format markdown`, the benchmark."""
    write = cell or (lambda value: "" if value is None else str(value))

    def shown(value: str) -> str:
        # A `|` would end the cell and a line break the row.
        return (value if width is None else display.shorten(value, width)).replace("|", "\\|").replace("\n", " ")

    def line(values: Iterable[str]) -> str:
        return "| " + " | ".join(shown(v) for v in values) + " |"

    return "\n".join([line(columns), line("---" for _ in columns), *(line(write(value) for value in row) for row in rows)])


def bounded_json(value: Any, text: int = JSON_TEXT_MAX, items: int = JSON_ITEMS_MAX) -> Any:
    """`value` for JSON metadata: every string cut to `text` characters, every list and mapping to
    its first `items` entries (then a string saying how many more), at any depth."""
    if isinstance(value, str):
        return display.shorten(value, text)
    if isinstance(value, dict):
        kept = {display.shorten(str(k), text): bounded_json(v, text, items) for k, v in list(value.items())[:items]}
        if len(value) > items:
            kept["…"] = f"{len(value) - items} more"
        return kept
    if isinstance(value, list | tuple):
        kept = [bounded_json(v, text, items) for v in value[:items]]
        return kept + [f"… {len(value) - items} more"] if len(value) > items else kept
    return value
