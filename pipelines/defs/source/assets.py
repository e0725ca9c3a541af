import dataclasses

import dagster as dg

from pipelines.defs.common import at_most_every, table_schema
from pipelines.defs.resources import Warehouse
from pipelines.defs.source.observations import commit_observations, commits_in_warehouse
from pipelines.lib import store
from pipelines.lib.display import shorten
from pipelines.lib.ingest import staged_metas
from pipelines.lib.metadata import bounded_json
from pipelines.lib.schemas import RUN_ROWS
from pipelines.lib.source_types import SnapshotRef
from pipelines.lib.warehouse import recorded_listing, stage_new, sync

# Progress lines of a long ingest, a few seconds apart.
PROGRESS_EVERY_S = 3.0
SNAPSHOT_REF_SCHEMA = dg.TableSchema(columns=[dg.TableColumn(f.name, str(f.type)) for f in dataclasses.fields(SnapshotRef)])


# Network steps retry with backoff inside the source (pipelines.lib.source.with_retries).
@dg.asset(group_name="source", kinds={"git"})
def upstream_source(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """The upstream benchmark data: the git repository (cloned once into the cache, fetched on every
    run) or the CSV file or URL that `LIGER_SOURCE` names, listed as one snapshot per
    (commit, file) that changed a `benchmark/data/all_benchmark_data*.csv` file."""
    with store.writer_lock(warehouse.path):
        listing = sync(warehouse.path, warehouse.source_settings())
    context.log.info(f"{warehouse.source} at {listing.head}: {len(listing.snapshots)} snapshots")
    return dg.MaterializeResult(
        metadata={
            "source": warehouse.source,
            "head": listing.head or "",
            "snapshots_listed": len(listing.snapshots),
            "files_at_head": dg.MetadataValue.json(bounded_json(list(listing.files_at_head))),
            "dagster/row_count": len(listing.snapshots),
            "dagster/column_schema": SNAPSHOT_REF_SCHEMA,
        },
        data_version=dg.DataVersion(listing.head or "empty"),
    )


@dg.asset(group_name="source", deps=[upstream_source], kinds={"polars", "parquet"})
def raw_snapshots(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """Every listed snapshot parsed and normalized once, into `WAREHOUSE_DIR/_staging/`. Snapshots
    staged by an earlier run are not read again, so a run with nothing new parses nothing."""
    listing = recorded_listing(warehouse.path)
    if listing is None:
        raise dg.Failure("no source listing: materialize upstream_source first")
    with store.writer_lock(warehouse.path):
        report = stage_new(warehouse.path, warehouse.source_settings(), listing, progress=at_most_every(PROGRESS_EVERY_S, context.log.info))
    summary = f"parsed {len(report.staged)} new snapshot(s)" if report.staged else "nothing new upstream: parsed nothing"
    context.log.info(summary)
    for warning in report.warnings:
        context.log.warning(f"schema drift upstream: {shorten(warning)}")
    for repaired in report.repaired:
        context.log.warning(f"damaged staging: {shorten(repaired)}")
    for observation in commit_observations(warehouse.path, report.staged):
        context.log_event(observation)
    return dg.MaterializeResult(
        metadata={
            **commits_in_warehouse(warehouse.path),
            "summary": summary,
            "dagster/row_count": sum(m.row_count for m in staged_metas(warehouse.path)),
            "dagster/column_schema": table_schema(RUN_ROWS),
            "snapshots_listed": report.listed,
            "snapshots_parsed": len(report.staged),
            "snapshots_already_staged": report.already,
            "parsed": dg.MetadataValue.json(bounded_json(report.staged)),
            "schema_warnings": dg.MetadataValue.json(bounded_json(report.warnings)),
            "staged_again_after_damage": dg.MetadataValue.json(bounded_json(report.repaired)),
        }
    )
