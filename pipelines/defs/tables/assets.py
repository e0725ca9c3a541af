import dagster as dg
import polars as pl

from pipelines.assemble.tables_build import CHECKS, TABLE_NAMES, BuildRefused, build_tables, tables_code_version
from pipelines.core import column_docs, schemas
from pipelines.core.layout import Layout
from pipelines.defs.common import REBUILD, WRITERS, check_result, table_metadata
from pipelines.defs.resources import Warehouse
from pipelines.ingest.steps import recorded_listing

PREVIEW_ROWS = 5
PREVIEW = {
    "runs": ["run_id", "title", "value", "unit", "in_latest"],
    "snapshots": ["snapshot_id", "committed_at", "row_count", "accepted", "quarantined"],
    "quarantine": ["snapshot_id", "row_number", "reason"],
}
# What each check asserts, shown on the check in the UI.
CHECK_DESCRIPTIONS = {
    "run_id_unique": "Every run_id appears once in runs.",
    "references_exist": "Every run's environment and protocol exist in their tables, and every measured run_id is a run.",
    "quantiles_ordered": "p20 <= p50 <= p80 for every passed run's measurements.",
    "every_row_accounted": "SPEC section 5: for every snapshot, row_count = accepted + quarantined, "
    "every accepted row maps to one run and every quarantined row is held.",
    "no_snapshot_rejected": "A warning, never blocking: the snapshots refused whole, each named with why (their rows are in quarantine).",
    "catalogs_cover_data": "A warning: every GPU and kernel in the data is in the catalogs (pipelines/catalog/gpus.csv, kernels.csv).",
}
BLOCKED = " The tables are judged by it before they are published: a build that fails it is never what readers see."


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            name,
            description=column_docs.TABLES[name],
            group_name="tables",
            deps=["raw_snapshots"],
            kinds={"parquet"},
            code_version=tables_code_version(),
            automation_condition=REBUILD,
        )
        for name in TABLE_NAMES
    ],
    check_specs=[
        dg.AssetCheckSpec(check, asset=asset, blocking=blocking, description=CHECK_DESCRIPTIONS[check] + (BLOCKED if blocking else ""))
        for asset, check, _, blocking in CHECKS
    ],
    can_subset=False,
    pool=WRITERS,
)
def warehouse_tables(context: dg.AssetExecutionContext, warehouse: Warehouse):
    """Assemble all tables from the staged snapshots as one build, check it, and publish it whole."""
    listing = recorded_listing(warehouse.path)
    with warehouse.writing():
        try:
            report = build_tables(warehouse.path, listing)
        except BuildRefused as refused:
            raise dg.Failure(
                description=str(refused),
                metadata={name: dg.MetadataValue.text(outcome.description) for name, outcome in refused.failed.items()},
            ) from None
        # Under the lock, so no other writer publishes a build while its first rows are read.
        heads = {name: pl.scan_parquet(Layout(warehouse.path).table(name)).head(PREVIEW_ROWS).collect() for name in TABLE_NAMES}
    context.log.info("tables rewritten" if report.rewritten else "nothing changed: the published tables kept")
    if report.damaged:
        context.log.warning(f"{report.damaged}: the tables were built again")
    if report.moved:
        context.log.warning(report.moved)
    for name in TABLE_NAMES:
        metadata = table_metadata(report.row_counts[name], heads[name], schemas.TABLES[name], PREVIEW.get(name), table=name)
        metadata["rewritten"] = dg.MetadataValue.bool(report.rewritten)
        # The build's key: the same inputs and code make the same tables, and Dagster sees them unchanged.
        yield dg.MaterializeResult(asset_key=name, metadata=metadata, data_version=dg.DataVersion(report.key))
    for asset, check, _, blocking in CHECKS:
        severity = dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN
        yield check_result(report.outcomes[check], asset, check, severity)
