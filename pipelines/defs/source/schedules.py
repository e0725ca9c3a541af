from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipelines.defs.resources import Warehouse
from pipelines.ingest.source.listing import Listing, SourceError
from pipelines.ingest.source.upstream_changes import sensor_listing
from pipelines.orchestration.plan import IngestPlan, plan_ingest, register

# Every asset and its checks: a run stages the snapshot partitions it names and recomputes only what changed.
ingest_everything = dg.define_asset_job(
    "ingest_everything",
    selection=dg.AssetSelection.all(),
    description="Fetch upstream, stage the snapshot partitions the run names, and rebuild tables, statistics and exports.",
)


def ingest_request(
    instance: dg.DagsterInstance, repository: dg.RepositoryDefinition | None, warehouse: Warehouse, listing: Listing
) -> tuple[dg.RunRequest, IngestPlan]:
    """The one run that brings the warehouse up to `listing`: the partitions to stage as a range (or
    none), with everything downstream."""
    plan = plan_ingest(instance, Path(warehouse.warehouse_dir), listing, warehouse.baselines)
    selection = plan.asset_selection(all_asset_keys(repository))
    tags = {**plan.range_tags, "upstream/new_snapshots": str(len(plan.new_keys))}
    return dg.RunRequest(partition_key=plan.partition_key, tags=tags, asset_selection=selection), plan


@dg.schedule(
    job=ingest_everything,
    cron_schedule="0 6 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every day at 06:00 UTC, ingest whatever upstream published since the last run.",
)
def daily_ingest(context: dg.ScheduleEvaluationContext, warehouse: Warehouse) -> dg.RunRequest:
    try:
        listing = sensor_listing(warehouse.path, warehouse.settings)
    except SourceError as error:
        # The run fails in upstream_source with the same one line, where the UI shows failed runs.
        context.log.warning(str(error))
        return dg.RunRequest(asset_selection=IngestPlan((), ()).asset_selection(all_asset_keys(context.repository_def)))
    request, plan = ingest_request(context.instance, context.repository_def, warehouse, listing)
    register(context.instance, plan.new_keys)
    context.log.info(plan.summary())
    return request


def all_asset_keys(repository: dg.RepositoryDefinition | None) -> list[dg.AssetKey]:
    """The keys of every asset of the code location evaluating a tick (none when a test builds the context bare)."""
    return list(repository.asset_graph.get_all_asset_keys()) if repository else []
