"""What the report shows, read from warehouse.duckdb in one read-only session.

The SQL is in `sql/report/report_*.sql`; this module only runs it and hands the
frames on. Values are in human units (ms, MiB) from the database's macros.
`change_points` (SPEC section 8) is read when the file has that table; a
warehouse built before it has none, and the report says so instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.core import sql_files
from pipelines.statistics import db

CHANGE_POINTS = "change_points"
# The columns of report_change_points.sql, for a warehouse without the table: an empty frame of them.
CHANGE_POINT_SCHEMA = {
    **dict.fromkeys(["group_id", "kernel", "gpu_name", "pass", "metric", "workload_slug", "provider", "backend"], pl.String),
    **dict.fromkeys(["verdict", "cause", "status"], pl.String),
    "below_min_effect": pl.Boolean,
    **dict.fromkeys(["ratio", "confidence", "before_value", "after_value"], pl.Float64),
    "unit": pl.String,
    **dict.fromkeys(["before_commit", "after_commit", "before_release", "after_release"], pl.String),
    **dict.fromkeys(["before_benchmarked_commit", "after_benchmarked_commit"], pl.String),
    **dict.fromkeys(["before_observed_at", "observed_at"], pl.Datetime("us", "UTC")),
    **dict.fromkeys(["before_run_id", "after_run_id", "baseline_provider", "baseline_backend"], pl.String),
}

NOISE_SCHEMA = {"group_id": pl.String, "provider": pl.String, "backend": pl.String, "noise": pl.Float64}


@dataclass(frozen=True)
class ReportData:
    points: pl.DataFrame  # report_points.sql: the latest run per (group, implementation), on its sweep
    runs: pl.DataFrame  # report_runs.sql: every run with its provenance
    series: pl.DataFrame  # report_series.sql: every passed run of upstream's CI, at its benchmarked commit
    change_points: pl.DataFrame  # report_change_points.sql (empty when the table is absent)
    noise: pl.DataFrame  # series_noise's group_id, provider, backend, noise (empty when the table is absent)
    has_change_points: bool  # whether warehouse.duckdb has the change_points table at all
    scorecard: pl.DataFrame  # kernel_scorecard: per implementation and baseline implementation
    environments: pl.DataFrame  # environments: one row per GPU
    snapshots: pl.DataFrame  # snapshots, oldest first

    @property
    def kernels(self) -> list[str]:
        return sorted(self.runs["kernel"].unique().to_list())

    @property
    def gpus(self) -> list[str]:
        return sorted(self.runs["gpu_name"].unique().to_list())

    @property
    def implementations(self) -> list[tuple[str, str]]:
        """Every (provider, backend), the most frequent first: the order in which their families get colors."""
        counts = self.runs.group_by("provider", "backend").len()
        return [(p, b) for p, b, _ in counts.sort(["len", "provider", "backend"], descending=[True, False, False]).iter_rows()]


def _has_table(con, name: str) -> bool:
    sql = "SELECT count(*) FROM information_schema.tables WHERE table_catalog = current_database() AND table_name = ?"
    [(count,)] = con.execute(sql, [name]).fetchall()
    return bool(count)


def load(warehouse_dir: Path) -> ReportData:
    with db.open_readonly(warehouse_dir) as con:

        def frame(sql: str) -> pl.DataFrame:
            return con.sql(sql).pl()

        has_change_points = _has_table(con, CHANGE_POINTS)
        if has_change_points:
            change_points = frame(sql_files.text("report/report_change_points"))
        else:
            change_points = pl.DataFrame(schema=CHANGE_POINT_SCHEMA)
        if _has_table(con, "series_noise"):
            noise = frame("SELECT group_id, provider, backend, noise FROM series_noise WHERE noise IS NOT NULL")
        else:
            noise = pl.DataFrame(schema=NOISE_SCHEMA)
        return ReportData(
            points=frame(sql_files.text("report/report_points")),
            runs=frame(sql_files.text("report/report_runs")),
            series=frame(sql_files.text("report/report_series")),
            change_points=change_points,
            noise=noise,
            has_change_points=has_change_points,
            scorecard=frame("SELECT * FROM kernel_scorecard ORDER BY gpu_name, metric, kernel, pass, provider, backend, baseline_backend"),
            environments=frame("SELECT * FROM environments ORDER BY gpu_name"),
            snapshots=frame("SELECT * FROM snapshots ORDER BY committed_at, snapshot_id"),
        )
