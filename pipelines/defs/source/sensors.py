import re

import dagster as dg

from pipelines.core import settings
from pipelines.defs.resources import Warehouse
from pipelines.defs.source.schedules import ingest_everything, ingest_request
from pipelines.ingest.upstream_changes import check_upstream
from pipelines.orchestration.plan import SNAPSHOTS

# Dagster refuses a tag value over 63 characters or outside this set (a CSV's sha256 has 64).
TAG_VALUE_MAX = 63
_NOT_TAG_TEXT = re.compile(r"[^A-Za-z0-9_.-]")


def tag_value(identifier: str) -> str:
    """`identifier` (a commit or content hash) as a tag value Dagster accepts; one too long keeps
    its first 12 characters, the prefix snapshot ids use."""
    value = _NOT_TAG_TEXT.sub("_", identifier)
    return value if len(value) <= TAG_VALUE_MAX else value[:12]


@dg.sensor(
    job=ingest_everything,
    minimum_interval_seconds=settings.read().sensor_interval_s,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def upstream_data_sensor(context: dg.SensorEvaluationContext, warehouse: Warehouse) -> dg.SensorResult:
    """At most hourly (`LIGER_SENSOR_INTERVAL_S`), ask upstream for its branch head (`git ls-remote`); when it moved, add its new
    snapshots as partitions of raw_snapshots and start one run that stages them, only if a data file
    changed. The cursor is the last head seen, so an unchanged head costs one cheap request."""
    check = check_upstream(warehouse.path, warehouse.source_settings(), context.cursor or None)
    cursor = check.head or context.cursor
    if check.listing is None:
        context.log.info(check.summary())
        return dg.SensorResult(skip_reason=check.summary(), cursor=cursor)
    request, plan = ingest_request(context.instance, context.repository_def, warehouse, check.listing)
    summary = check.summary(plan.summary() if plan.stage_keys else None)
    context.log.info(summary)
    if not plan.stage_keys and not check.files_at_head_changed:
        return dg.SensorResult(skip_reason=summary, cursor=cursor)
    head = tag_value(check.head or "")
    request = request.with_replaced_attrs(run_key=head, tags={**request.tags, "upstream/head": head})
    partitions = [SNAPSHOTS.build_add_request(list(plan.new_keys))] if plan.new_keys else []
    return dg.SensorResult(run_requests=[request], cursor=cursor, dynamic_partitions_requests=partitions)
