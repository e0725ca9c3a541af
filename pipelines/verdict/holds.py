"""What the warehouse's history holds of a contender's kernels on its GPUs, so a `no baseline` line can name it."""

from __future__ import annotations

import polars as pl

from pipelines.core import sql_files
from pipelines.statistics import db

SCHEMA = pl.Schema(
    {
        "kernel": pl.String,
        "gpu_name": pl.String,
        "backend": pl.String,
        "workloads": pl.Int64,
        "examples": pl.List(pl.String),
        "newest": pl.Datetime("us", "UTC"),
        "liger_version": pl.String,
    }
)


def history_holds(session: db.Session) -> pl.DataFrame:
    """What the warehouse's history holds of the registered `contender_series`' kernels on their GPUs
    (sql/verdict/history_holds.sql): kernel, gpu_name, backend, workloads, examples, newest, liger_version."""
    result = session.query(sql_files.text("verdict/history_holds"))
    return pl.DataFrame(result.rows, schema=SCHEMA, orient="row")
