"""What the report shows, read from warehouse.duckdb in one read-only session.

The SQL is in `sql/report/report_*.sql`; this module only runs it and hands the
frames on. Values are in human units (ms, MiB) from the database's macros.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.core import sql_files
from pipelines.duck import db


@dataclass(frozen=True)
class ReportData:
    points: pl.DataFrame  # report_points.sql: the latest run per (group, provider), on its sweep
    runs: pl.DataFrame  # report_runs.sql: every run with its provenance
    changes: pl.DataFrame  # report_changes.sql: regressions and improvements, newest first
    scorecard: pl.DataFrame  # kernel_scorecard
    environments: pl.DataFrame  # environments: one row per GPU
    snapshots: pl.DataFrame  # snapshots, oldest first
    unchanged: int  # version_changes rows left off the changes page

    @property
    def kernels(self) -> list[str]:
        return sorted(self.runs["kernel"].unique().to_list())

    @property
    def gpus(self) -> list[str]:
        return sorted(self.runs["gpu_name"].unique().to_list())

    @property
    def providers(self) -> list[str]:
        """Every provider, the most frequent first: the order in which they get colors."""
        counts = self.runs.group_by("provider").len().sort(["len", "provider"], descending=[True, False])
        return counts["provider"].to_list()


def load(warehouse_dir: Path) -> ReportData:
    with db.open_readonly(warehouse_dir) as con:

        def frame(sql: str) -> pl.DataFrame:
            return con.sql(sql).pl()

        (unchanged,) = con.execute("SELECT count(*) FROM version_changes WHERE verdict = 'unchanged'").fetchall()[0]
        return ReportData(
            points=frame(sql_files.text("report/report_points")),
            runs=frame(sql_files.text("report/report_runs")),
            changes=frame(sql_files.text("report/report_changes")),
            scorecard=frame("SELECT * FROM kernel_scorecard ORDER BY gpu_name, metric, kernel, pass, provider"),
            environments=frame("SELECT * FROM environments ORDER BY gpu_name"),
            snapshots=frame("SELECT * FROM snapshots ORDER BY committed_at, snapshot_id"),
            unchanged=int(unchanged),
        )
