import dataclasses
from collections.abc import Iterator

import dagster as dg

from pipelines.core.display import shorten
from pipelines.core.metadata import bounded_json
from pipelines.core.schemas import RUN_ROWS
from pipelines.defs.common import WRITERS, at_most_every, table_schema
from pipelines.defs.resources import Warehouse
from pipelines.ingest import staging
from pipelines.ingest.source.address import normalized_source
from pipelines.ingest.source.listing import Listing, SnapshotRef, SourceError
from pipelines.ingest.staging import SnapshotMeta
from pipelines.ingest.steps import recorded_listing, stage, sync
from pipelines.orchestration.plan import (
    LISTED_TAG,
    LISTING_FAILED_TAG,
    NORMALIZER_CODE_VERSION,
    SNAPSHOTS,
    new_keys,
    partition_materialization,
    register,
    staged_from,
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
    # Each log line is an event written to the instance: one line says both what was listed and by whom.
    listed_by = " (listed by the command that started this run, not read again)" if listing is not None else ""
    if listing is None:
        with warehouse.writing():
            listing = sync(warehouse.path, warehouse.settings)
    register(context.instance, new_keys(context.instance, listing))
    # New is never staged: the command and the sensor register a run's partitions before it starts, so "not a
    # partition yet" would count none of the snapshots this very run stages.
    staged = context.instance.get_materialized_partitions(raw_snapshots.key)
    new = [ref.snapshot_id for ref in listing.snapshots if ref.snapshot_id not in staged]
    context.log.info(f"{warehouse.source} at {listing.head}: {len(listing.snapshots)} snapshots, {len(new)} new (never staged){listed_by}")
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
def raw_snapshots(context: dg.AssetExecutionContext, warehouse: Warehouse) -> Iterator[dg.MaterializeResult | dg.AssetMaterialization]:
    """One partition per upstream snapshot (commit, file), parsed and normalized into
    `WAREHOUSE_DIR/_staging/`. A run stages the partitions it covers (a range of them, in history
    order) on up to `LIGER_STAGING_WORKERS` processes; the other partitions are not read. Each partition's
    data version is what it holds: its file's sha256 and the normalizer's version."""
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
    metadata = {
        "summary": summary,
        "dagster/column_schema": table_schema(RUN_ROWS),
        "snapshots_in_run": len(keys),
        "snapshots_parsed": len(report.staged),
        "staged_again_after_damage": dg.MetadataValue.json(bounded_json(report.repaired)),
    }
    metas = _metas(warehouse, keys, report.metas)
    if len(keys) == 1:
        yield dg.MaterializeResult(
            metadata={**metadata, **partition_metadata(metas[keys[0]])},
            data_version=dg.DataVersion(staging.content_version(metas[keys[0]])),
        )
        return
    # A range: Dagster records the run's one data version on every partition, then each partition's own follows. Both
    # carry the partition's metadata, so that every materialization of a partition says what it holds.
    for key in keys:
        context.add_asset_metadata(partition_metadata(metas[key]), partition_key=key)
    yield dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(f"range-run-{context.run.run_id}"))
    inputs = staged_from(context.instance)
    for key in keys:
        yield partition_materialization(metas[key], partition_metadata(metas[key]), inputs)


def _metas(warehouse: Warehouse, keys: list[str], staged: list[SnapshotMeta]) -> dict[str, SnapshotMeta]:
    """The metadata of each of `keys`: those this run staged, and those it kept (no longer listed, their staging the
    only copy), read back from their folders."""
    metas = {meta.snapshot_id: meta for meta in staged}
    if any(key not in metas for key in keys):
        metas = {meta.snapshot_id: meta for meta in staging.staged_metas(warehouse.path)} | metas
    missing = [key for key in keys if key not in metas]
    if missing:
        raise dg.Failure(f"snapshot {missing[0]} was neither staged nor found staged intact: run again to stage it")
    return metas


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
