"""Plain descriptions of tables for asset metadata: column schemas and markdown previews."""

from __future__ import annotations

import polars as pl


def column_types(schema: pl.Schema) -> list[tuple[str, str]]:
    return [(name, str(dtype)) for name, dtype in schema.items()]


def markdown_preview(frame: pl.DataFrame, columns: list[str] | None = None, rows: int = 5) -> str:
    """A small markdown table; long cells are cut so the preview stays readable."""
    shown = frame.select(columns or frame.columns[:6]).head(rows)
    if shown.is_empty():
        return "_(no rows)_"
    header = "| " + " | ".join(shown.columns) + " |"
    rule = "| " + " | ".join("---" for _ in shown.columns) + " |"
    body = [
        "| " + " | ".join(_cell(value) for value in row) + " |"
        for row in shown.iter_rows()
    ]
    return "\n".join([header, rule, *body])


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."
