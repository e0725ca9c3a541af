import re
import time
from datetime import UTC, datetime

import dagster as dg

from pipelines.core import settings
from pipelines.defs.resources import Warehouse
from pipelines.defs.source.schedules import ingest_everything, ingest_request
from pipelines.ingest.source.listing import SourceError
from pipelines.ingest.source.upstream_changes import check_upstream
from pipelines.orchestration.plan import SNAPSHOTS
from pipelines.orchestration.sensor_cursor import LOST_AFTER_S, Pending, SensorCursor

# Dagster refuses a tag value over 63 characters or outside this set (a CSV's sha256 has 64).
TAG_VALUE_MAX = 63
_NOT_TAG_TEXT = re.compile(r"[^A-Za-z0-9_.-]")


def tag_value(identifier: str) -> str:
    """`identifier` (a commit or content hash) as a tag value Dagster accepts; one too long keeps
    its first 12 characters, the prefix snapshot ids use."""
    value = _NOT_TAG_TEXT.sub("_", identifier)
    return value if len(value) <= TAG_VALUE_MAX else value[:12]


HEAD_TAG = "upstream/head"
ATTEMPT_TAG = "upstream/attempt"
FINISHED_BADLY = {dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


@dg.sensor(
    job=ingest_everything,
    minimum_interval_seconds=settings.read().sensor_interval_s,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def upstream_data_sensor(context: dg.SensorEvaluationContext, warehouse: Warehouse) -> dg.SensorResult:
    """At most hourly (`LIGER_SENSOR_INTERVAL_S`), ask upstream for its branch head (`git ls-remote`); when it moved, add its new
    snapshots as partitions of raw_snapshots and start one run that stages them, only if a data file
    changed. The cursor is the last head the warehouse holds: it moves past a head only once its run succeeded,
    and a failed run is asked for again after a backoff (`pipelines/orchestration/sensor_cursor.py`)."""
    cursor = SensorCursor.parse(context.cursor)
    now = time.time()
    retry = False
    if cursor.pending is not None:
        status = _status(context.instance, cursor.pending)
        if status == dg.DagsterRunStatus.SUCCESS:
            cursor = cursor.succeeded()
        elif status in FINISHED_BADLY or (status is None and now - cursor.pending.asked_at > LOST_AFTER_S):
            retry_at = cursor.pending.retry_at(warehouse.sensor_interval_s)
            if now < retry_at:
                waiting = f"the run for upstream head {cursor.pending.head[:12]} failed; asking again after {_when(retry_at)}"
                return dg.SensorResult(skip_reason=waiting, cursor=cursor.dump())
            retry = True
        else:
            waiting = f"the run for upstream head {cursor.pending.head[:12]} has not finished"
            return dg.SensorResult(skip_reason=waiting, cursor=cursor.dump())
    try:
        check = check_upstream(warehouse.path, warehouse.settings, cursor.head)
    except SourceError as error:
        # Offline, or another source than the warehouse's: a tick that cannot ask is skipped with the reason in one
        # line (the tick's own stack would say nothing more); the next tick asks again.
        reason = f"cannot ask the source {warehouse.source}: {error}"
        context.log.warning(reason)
        return dg.SensorResult(skip_reason=reason, cursor=cursor.dump())
    if check.listing is None:
        context.log.info(check.summary())
        return dg.SensorResult(skip_reason=check.summary(), cursor=SensorCursor(check.head or cursor.head).dump())
    request, plan = ingest_request(context.instance, context.repository_def, warehouse, check.listing)
    summary = check.summary(plan.summary() if plan.stage_keys else None)
    context.log.info(summary)
    # A retry asks for its run even with nothing to stage: what failed may be the tables or what follows them.
    if not plan.stage_keys and not check.files_at_head_changed and not retry:
        return dg.SensorResult(skip_reason=summary, cursor=SensorCursor(check.head).dump())
    asked = cursor.asked(check.head or "", now, retry)
    # A run key is a tag: a CSV source's head (a sha256) is too long for one, and is shortened as tags are.
    retry_suffix = "" if asked.pending.attempt == 0 else f"-retry-{asked.pending.attempt}"
    request = request.with_replaced_attrs(
        run_key=tag_value(asked.pending.head) + retry_suffix, tags={**request.tags, **_tags(asked.pending)}
    )
    partitions = [SNAPSHOTS.build_add_request(list(plan.new_keys))] if plan.new_keys else []
    return dg.SensorResult(run_requests=[request], cursor=asked.dump(), dynamic_partitions_requests=partitions)


def _status(instance: dg.DagsterInstance, pending: Pending) -> dg.DagsterRunStatus | None:
    """The status of the newest run asked for `pending` (by its tags, which a run launched by hand from the request
    carries too); None when there is none yet."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags=_tags(pending)), limit=1)
    return runs[0].status if runs else None


def _tags(pending: Pending) -> dict[str, str]:
    return {HEAD_TAG: tag_value(pending.head), ATTEMPT_TAG: str(pending.attempt)}


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")
