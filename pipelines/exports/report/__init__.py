"""The static report: pictures of who wins, where, and what changed, as a site that opens from disk.

`build_report(warehouse_dir)` renders WAREHOUSE_DIR/report/ from warehouse.duckdb;
`is_stale(warehouse_dir)` tells whether the statistics (or the report's code)
changed since; `build_report_if_stale` builds only then.
"""

from pipelines.exports.report.report_build import build_report, build_report_if_stale, is_stale
from pipelines.exports.report.site import ReportSummary

__all__ = ["ReportSummary", "build_report", "build_report_if_stale", "is_stale"]
