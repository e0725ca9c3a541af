import dataclasses

import dagster as dg

from pipelines.core.display import shorten
from pipelines.core.metadata import bounded_json
from pipelines.core.schemas import RUN_ROWS
from pipelines.defs.common import WRITERS, at_most_every, table_schema
from pipelines.defs.resources import Warehouse
from pipelines.ingest.source.address import normalized_source
from pipelines.ingest.source.listing import Listing, SnapshotRef, SourceError
from pipelines.ingest.staging import SnapshotMeta
from pipelines.ingest.steps import recorded_listing, stage, sync
from pipelines.orchestration.plan import (
    LISTED_TAG,
    LISTING_FAILED_TAG,
    NORMALIZER_CODE_VERSION,
    SNAPSHOTS,
    STAGED_DATA_VERSION,
    new_keys,
    register,
)
from pipelines.storage import store

# Progress lines of a long ingest, a few seconds apart.
PROGRESS_EVERY_S = 3.0
NO_PARTITION = (
    "raw_snapshots stages the snapshot partitions a run names, and this run names none: run "
    "`python -m pipelines materialize` (it chooses them), materialize the partitions from the UI, or launch "
    """ingest_everything with --tags '{"dagster/partition": "<snapshot id>"}' (or a range: dagster/asset_partition_range_start """
    "and dagster/asset_partition_range_end)"
)
SNAPSHOT_REF_SCHEMA = dg.TableSchema(columns=[dg.TableColumn(f.name, str(f.type)) for f in dataclasses.fields(SnapshotRef)])


# Network steps retry with backoff inside the source (pipelines.ingest.source.retry.with_retries).
@dg.asset(group_name="source", kinds={"git"}, pool=WRITERS)
def upstream_source(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """The upstream benchmark data: the git repository (cloned once into the cache, fetched on every
    run) or the CSV file or URL that `LIGER_SOURCE` names, listed as one snapshot per distinct content
    of a data file: `main`'s `benchmark/data/all_benchmark_data*.csv` (stream `data`) and `gh-pages`'
    `benchmarks/<commit>/benchmark.csv` (stream `ci`, upstream's CI history). Each snapshot not seen
    before becomes a partition of raw_snapshots."""
    listing = _listed_by_the_command(context, warehouse)
    if listing is None:
        with warehouse.writing():
            listing = sync(warehouse.path, warehouse.settings)
    register(context.instance, new_keys(context.instance, listing))
    # New is never staged: the command and the sensor register a run's partitions before it starts, so "not a
    # partition yet" would count none of the snapshots this very run stages.
    staged = context.instance.get_materialized_partitions(raw_snapshots.key)
    new = [ref.snapshot_id for ref in listing.snapshots if ref.snapshot_id not in staged]
    context.log.info(f"{warehouse.source} at {listing.head}: {len(listing.snapshots)} snapshots, {len(new)} new (never staged)")
    return dg.MaterializeResult(
        metadata={
            "source": warehouse.source,
            "head": listing.head or "",
            "snapshots_listed": len(listing.snapshots),
            "new_partitions": dg.MetadataValue.json(bounded_json(new)),
            "files_at_head": dg.MetadataValue.json(bounded_json(list(listing.files_at_head))),
            "dagster/row_count": len(listing.snapshots),
            "dagster/column_schema": SNAPSHOT_REF_SCHEMA,
        },
        # A snapshot's content never changes under its id, so a new head does not make the staged ones
        # stale: the source's data version is which source it is.
        data_version=dg.DataVersion(normalized_source(warehouse.source)[:200]),
    )


@dg.asset(
    group_name="source",
    deps=[upstream_source],
    kinds={"polars", "parquet"},
    partitions_def=SNAPSHOTS,
    backfill_policy=dg.BackfillPolicy.single_run(),
    code_version=NORMALIZER_CODE_VERSION,
    pool=WRITERS,
)
def raw_snapshots(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """One partition per upstream snapshot (commit, file), parsed and normalized into
    `WAREHOUSE_DIR/_staging/`. A run stages the partitions it covers (a range of them, in history
    order) on up to `LIGER_STAGING_WORKERS` processes; the other partitions are not read."""
    if not (context.has_partition_key or context.has_partition_key_range):
        # `dagster job launch -j ingest_everything` names none; Dagster's own error would not say what to pass.
        raise dg.Failure(NO_PARTITION)
    listing = recorded_listing(warehouse.path)
    if listing is None:
        raise dg.Failure("no source listing: materialize upstream_source first")
    keys = context.partition_keys
    with warehouse.writing():
        report = stage(
            warehouse.path,
            warehouse.settings,
            listing,
            keys,
            workers=warehouse.staging_workers,
            progress=at_most_every(PROGRESS_EVERY_S, context.log.info),
        )
    summary = f"staged {len(report.staged)} snapshot(s)"
    context.log.info(summary)
    for warning in report.warnings:
        context.log.warning(f"schema drift upstream: {shorten(warning)}")
    for repaired in report.repaired:
        context.log.warning(f"damaged staging: {shorten(repaired)}")
    for meta in report.metas:
        context.add_asset_metadata(partition_metadata(meta), partition_key=meta.snapshot_id)
    return dg.MaterializeResult(
        metadata={
            "summary": summary,
            "dagster/column_schema": table_schema(RUN_ROWS),
            "snapshots_in_run": len(keys),
            "snapshots_parsed": len(report.staged),
            "staged_again_after_damage": dg.MetadataValue.json(bounded_json(report.repaired)),
        },
        data_version=STAGED_DATA_VERSION,
    )


def _listed_by_the_command(context: dg.AssetExecutionContext, warehouse: Warehouse) -> Listing | None:
    """The listing the command that started this run made a moment ago (`python -m pipelines materialize` lists the
    source to plan the run's partitions), so that one run reads the source once; None when the run must list it."""
    if failed := context.run.tags.get(LISTING_FAILED_TAG):
        raise SourceError(failed)
    head = context.run.tags.get(LISTED_TAG)
    if head is None:
        return None
    try:
        listing = recorded_listing(warehouse.path)
    except store.DamagedFile:
        return None
    if listing is None or (listing.head or "") != head:
        return None
    context.log.info("the source was listed by the command that started this run: not read again")
    return listing


def partition_metadata(meta: SnapshotMeta) -> dict:
    """What the UI shows on one partition: its commit, when, what, and its row accounting."""
    return {
        "commit": meta.commit or "",
        "committed_at": meta.committed_at or "",
        # Upstream's subject and paths may be of any length: the instance keeps them on every run.
        "subject": shorten(meta.subject or ""),
        "source_file": shorten(meta.source_file),
        "content_sha256": meta.content_sha256,
        "status": meta.status,
        "stream": meta.stream,
        # A CI snapshot's benchmarked commit and release (SPEC section 7): where on upstream's main it stands.
        "benchmarked_commit": meta.benchmarked_commit or "",
        "release": meta.release or "",
        "dagster/row_count": meta.row_count,
        "accepted": meta.accepted,
        "quarantined": meta.quarantined,
        "schema_warnings": dg.MetadataValue.json(bounded_json(meta.warnings)),
    }
