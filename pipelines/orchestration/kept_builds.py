"""Whether a run would keep every build as it is: the question a run that stages nothing asks before it starts.

Each stage keeps its published build when the build's key is the one its inputs and code give now and its files
are whole; each stage answers that itself (`kept_build` beside the function that builds it, by the same key and the
same damage checks). When all of them would keep theirs, a run of them would only report the data versions Dagster
already holds, so the ingest runs `upstream_source` alone (pipelines/orchestration/plan.py). No Dagster here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipelines import stages
from pipelines.assemble import tables_build
from pipelines.core import layout
from pipelines.exports import export_builds
from pipelines.exports.report import report_build
from pipelines.ingest.source.listing import Listing
from pipelines.statistics import database_publish

EXPORT_STAGES = (layout.DOCUMENTS_STAGE, layout.LIGER_CSV_STAGE, layout.BMF_STAGE)


def kept_data_versions(warehouse: Path, listing: Listing | None, baselines: Sequence[str]) -> dict[str, str] | None:
    """Each asset below the staging (tables, statistics, exports, report) with the data version a run would give it,
    when every stage would keep its published build for `listing` and `baselines`; None as soon as one would build,
    repair or publish another (a warehouse never built, a file deleted by hand, new code, other settings)."""
    tables = tables_build.kept_build(warehouse, listing)
    if tables is None:
        return None
    versions = {name: tables.key for name in stages.stage(layout.TABLES_STAGE).outputs}
    for name in EXPORT_STAGES:
        export = export_builds.kept_build(warehouse, export_builds.Export(name))
        if export is None:
            return None
        versions |= {asset: export.key for asset in stages.stage(name).outputs}
    if report_build.is_stale(warehouse):
        return None
    versions |= {asset: report_build.report_key(warehouse) for asset in stages.stage(layout.REPORT_STAGE).outputs}
    # Last: keeping warehouse.duckdb reads it whole for its sha256, which the statistics step would read again.
    database = database_publish.kept_build(warehouse, baselines)
    return None if database is None else versions | dict(database.result["statistics"])
