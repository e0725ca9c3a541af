"""Conflicts (SPEC section 5): a row whose run (its key and timestamp) was already seen, in history order, with
other values (a y value, the unit or the version) is no second run and no repeat of the first: the run keeps the
values first seen, and the row goes to quarantine naming both snapshots, as its own text, so the snapshot still
rebuilds byte for byte and its row count still adds up.

Only what the row measured and how counts: the y values as numbers (`0.50` is `0.5`), the unit, the version. A
field that is no value (`x_label`, a column upstream added later) differing alone is the same run written otherwise.
"""

from __future__ import annotations

import json

import polars as pl

from pipelines.core.schemas import AS_WRITTEN, QUARANTINE, RUN_ROWS
from pipelines.ingest.parse import render

# The values a repeat of a run must carry unchanged (RUN_ROWS columns), each with the CSV column and the text it is
# named by in a reason.
COMPARED = {
    "raw_p50": ("y_value_50", "raw_y_value_50"),
    "raw_p20": ("y_value_20", "raw_y_value_20"),
    "raw_p80": ("y_value_80", "raw_y_value_80"),
    "raw_unit": ("metric_unit", "raw_unit"),
    "liger_version": ("liger_version", "liger_version"),
}
# A conflicting row: its staged fields (to give back its text), its run's first snapshot and what differs.
CONFLICTS = pl.Schema({**RUN_ROWS, "first_snapshot": pl.String, "differs": pl.String})


def conflicting(rows: pl.DataFrame) -> pl.Series:
    """Whether each row (in history order, `_key` its run key) differs in a compared value from its run's first row."""
    return rows.select(
        pl.any_horizontal([~pl.col(c).eq_missing(pl.col(c).first().over("_key")) for c in COMPARED]).alias("_conflict")
    ).to_series()


def conflict_rows(rows: pl.DataFrame, conflict: pl.Series) -> pl.DataFrame:
    """The conflicting rows (CONFLICTS, plus `_key`), each with its run's first snapshot and what differs from it."""
    kept = dict.fromkeys([*COMPARED, *(text for _, text in COMPARED.values())])
    firsts = (
        rows.filter(pl.col("_key").is_in(rows.filter(conflict)["_key"].implode()))
        .group_by("_key", maintain_order=True)
        .agg(pl.col("snapshot_id").first().alias("first_snapshot"), *[pl.col(c).first().alias(f"_first_{c}") for c in kept])
    )
    found = rows.filter(conflict).join(firsts, on="_key", how="left", maintain_order="left")
    differs = pl.concat_str(
        [
            pl.when(~pl.col(c).eq_missing(pl.col(f"_first_{c}"))).then(
                pl.format("{}: {} there, {} here", pl.lit(name), _shown(f"_first_{text}"), _shown(text))
            )
            for c, (name, text) in COMPARED.items()
        ],
        separator="; ",
        ignore_nulls=True,
    )
    return found.with_columns(differs.alias("differs")).select(*CONFLICTS.names(), "_key").cast(CONFLICTS)


def _shown(column: str) -> pl.Expr:
    text = pl.col(column).str.slice(0, 80)
    return pl.when(text.is_null()).then(pl.lit("(no column)")).when(text == "").then(pl.lit("(empty)")).otherwise(text)


def quarantine_rows(conflicts: pl.DataFrame, headers: dict[str, list[str]]) -> pl.DataFrame:
    """The quarantine rows of conflicts (CONFLICTS with their runs' final ids): each row's text as the csv writer
    writes its fields in its snapshot's header order (a row written otherwise keeps its text in the layout)."""
    raws, reasons = [], []
    for row in conflicts.iter_rows(named=True):
        extra = json.loads(row["extra_columns"]) if row["extra_columns"] else {}
        fields = [row[AS_WRITTEN[c]] if c in AS_WRITTEN else extra.get(c) for c in headers[row["snapshot_id"]]]
        raws.append(render(fields))
        reasons.append(
            f"conflict: run {row['run_id']} was first seen in {row['first_snapshot']} with other values ({row['differs']}); "
            f"this row of {row['snapshot_id']} is not a second run"
        )
    return pl.DataFrame(
        {
            "snapshot_id": conflicts["snapshot_id"],
            "row_number": conflicts["row_number"],
            "raw": pl.Series(raws, dtype=pl.String),
            "reason": pl.Series(reasons, dtype=pl.String),
        },
        schema=QUARANTINE,
    )
