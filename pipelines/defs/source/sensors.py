import dagster as dg

from pipelines.defs.resources import Warehouse
from pipelines.defs.source.observations import tag_value
from pipelines.defs.source.schedules import ingest_everything
from pipelines.lib.upstream_changes import check_upstream


@dg.sensor(
    job=ingest_everything,
    minimum_interval_seconds=3600,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def upstream_data_sensor(context: dg.SensorEvaluationContext, warehouse: Warehouse) -> dg.SensorResult:
    """At most hourly, ask upstream for its branch head (`git ls-remote`); when it moved, start a
    run only if a data file changed that the warehouse has not ingested. The cursor is the last
    head seen, so an unchanged head costs one cheap request."""
    check = check_upstream(warehouse.path, warehouse.source_settings(), context.cursor or None)
    context.log.info(check.summary())
    cursor = check.head or context.cursor
    if not check.needs_ingest:
        return dg.SensorResult(skip_reason=check.summary(), cursor=cursor)
    request = dg.RunRequest(
        run_key=tag_value(check.head or ""),
        tags={"upstream/head": tag_value(check.head or ""), "upstream/new_snapshots": str(len(check.new_snapshots))},
    )
    return dg.SensorResult(run_requests=[request], cursor=cursor)
