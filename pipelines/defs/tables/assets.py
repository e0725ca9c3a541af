import dagster as dg
import polars as pl

from pipelines.assemble import checks
from pipelines.assemble.build import TABLE_NAMES, build_tables
from pipelines.core import column_docs, schemas
from pipelines.defs.common import WRITERS, check_result, table_metadata, table_version
from pipelines.defs.resources import Warehouse
from pipelines.ingest.steps import recorded_listing

PREVIEW_ROWS = 5
PREVIEW = {
    "runs": ["run_id", "title", "value", "unit", "in_latest"],
    "snapshots": ["snapshot_id", "committed_at", "row_count", "accepted", "quarantined"],
    "quarantine": ["snapshot_id", "row_number", "reason"],
}
CHECKS = [
    ("runs", "run_id_unique", checks.run_ids_unique, dg.AssetCheckSeverity.ERROR),
    ("runs", "references_exist", checks.references_exist, dg.AssetCheckSeverity.ERROR),
    ("measurements", "quantiles_ordered", checks.quantiles_ordered, dg.AssetCheckSeverity.ERROR),
    ("snapshots", "every_row_accounted", checks.snapshot_accounting, dg.AssetCheckSeverity.ERROR),
    ("snapshots", "no_snapshot_rejected", checks.snapshots_rejected, dg.AssetCheckSeverity.WARN),
    ("environments", "catalogs_cover_data", checks.catalog_coverage, dg.AssetCheckSeverity.WARN),
]
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


@dg.multi_asset(
    specs=[
        dg.AssetSpec(name, description=column_docs.TABLES[name], group_name="tables", deps=["raw_snapshots"], kinds={"parquet"})
        for name in TABLE_NAMES
    ],
    check_specs=[
        dg.AssetCheckSpec(check, asset=asset, blocking=severity == dg.AssetCheckSeverity.ERROR, description=CHECK_DESCRIPTIONS[check])
        for asset, check, _, severity in CHECKS
    ],
    can_subset=False,
    pool=WRITERS,
)
def warehouse_tables(context: dg.AssetExecutionContext, warehouse: Warehouse):
    """Assemble all tables from the staged snapshots and commit them together (all or nothing)."""
    listing = recorded_listing(warehouse.path)
    with warehouse.writing():
        report = build_tables(warehouse.path, listing)
        # Under the lock, so no other writer replaces a file while its first rows are read.
        heads = {name: pl.scan_parquet(warehouse.path / f"{name}.parquet").head(PREVIEW_ROWS).collect() for name in TABLE_NAMES}
    context.log.info("tables rewritten" if report.rewritten else "nothing changed: no table rewritten")
    if report.moved:
        context.log.warning(report.moved)
    for name in TABLE_NAMES:
        metadata = table_metadata(report.row_counts[name], heads[name], schemas.TABLES[name], PREVIEW.get(name), table=name)
        metadata["rewritten"] = dg.MetadataValue.bool(report.rewritten)
        # The same inputs make the same table: Dagster sees it unchanged, and what reads it not stale.
        yield dg.MaterializeResult(
            asset_key=name, metadata=metadata, data_version=table_version(report.fingerprint, report.row_counts[name])
        )
    for asset, check, function, severity in CHECKS:
        yield check_result(function(warehouse.path), asset, check, severity)
