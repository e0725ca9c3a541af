"""Run the ingest in-process with the Dagster instance of a DAGSTER_HOME, as the daily schedule would, printing progress."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import dagster as dg
import sqlalchemy.exc

from pipelines.core.errors import UserError
from pipelines.core.settings import Settings
from pipelines.ingest.source.listing import SourceError
from pipelines.ingest.steps import sync
from pipelines.orchestration import console
from pipelines.orchestration.instance_home import open_instance
from pipelines.orchestration.plan import LISTED_TAG, LISTING_FAILED_TAG, UPSTREAM_SOURCE, IngestPlan, plan_ingest, register
from pipelines.storage import store

# Progress at INFO: one line per step and per staged snapshot, not Dagster's debug stream.
CONSOLE_INFO = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
# Dagster's switch for one "materialization planned" event per asset of a range run, naming its partitions, instead
# of one per partition (read when the run is created): 83 events fewer in a first run of upstream's two streams. What
# it gives up: a range run that fails does not mark its partitions failed; the next plan stages them anyway (their
# data versions are not what their staging folders hold).
PLANNED_AS_ONE = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"


def ingest(definitions: dg.Definitions, instance: dg.DagsterInstance, **execute) -> dg.ExecuteInProcessResult:
    """One run that brings the warehouse up to upstream: the source is listed first, its new snapshots
    become partitions, and the run stages those that need it (one range) and everything downstream."""
    warehouse = definitions.resources["warehouse"]
    try:
        with store.writer_lock(warehouse.path):
            listing = sync(warehouse.path, warehouse.settings)
    except SourceError as exc:
        # Run without partitions: upstream_source fails the run with the same one line, recorded where runs are.
        plan = IngestPlan((), ())
        execute["tags"] = {LISTING_FAILED_TAG: str(exc)[:2000], **execute.get("tags", {})}
    else:
        plan = plan_ingest(instance, warehouse.path, listing, warehouse.baselines)
        register(instance, plan.new_keys)
        execute["tags"] = {LISTED_TAG: listing.head or "", **execute.get("tags", {})}
    # Every asset of `definitions` (in the code location, the same as the schedule's job ingest_everything).
    job = definitions.resolve_implicit_global_asset_job_def()
    if loggers := execute.pop("loggers", None):
        job = job.with_logger_defs(loggers)
    keys = list(definitions.resolve_asset_graph().get_all_asset_keys())
    return job.execute_in_process(
        instance=instance,
        partition_key=plan.partition_key,
        tags={**plan.range_tags, **execute.pop("tags", {})},
        asset_selection=plan.asset_selection(keys),
        **execute,
    )


def materialize_all(home: Path, current: Settings, verbose: bool = False) -> int:
    """Ingest and compute everything `current` names with the instance in `home`; a failed step ends it with its one line (its stack
    in the log with `verbose`), an interrupt with KeyboardInterrupt (the warehouse keeps its last commit)."""
    from pipelines.definitions import definitions_for
    from pipelines.orchestration.run_health import fail_dead_runs, worker_tags

    os.environ.setdefault(PLANNED_AS_ONE, "true")
    try:
        with open_instance(home, capture_output=False) as instance:
            for message in fail_dead_runs(instance):
                print(message, file=sys.stderr)
            result = ingest(
                definitions_for(current),
                instance,
                raise_on_error=False,
                run_config=CONSOLE_INFO,
                tags=worker_tags(),
                loggers={"console": console.console_logger(verbose)},
            )
    except sqlalchemy.exc.DBAPIError as exc:
        # The instance's own storage failed (a full disk, a database that went away): the run cannot even be recorded.
        raise UserError(
            f"the Dagster instance in {home} cannot be written or read ({exc.orig}); free disk space or fix its storage, then run again"
        ) from None
    if result.success:
        if {event.asset_key for event in result.get_asset_materialization_events()} == {UPSTREAM_SOURCE}:
            print(f"nothing changed upstream, in the code or in the settings: every asset kept as it is (run {result.run_id})")
        else:
            print(f"materialized every asset (run {result.run_id})")
        return 0
    if console.interrupted(result):
        raise KeyboardInterrupt
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            print(f"failed: {event.step_key}: {_first_line(event.step_failure_data.error)}", file=sys.stderr)
            break
    else:
        print(f"the run {result.run_id} failed", file=sys.stderr)
    return 1


def _first_line(error) -> str:
    # A SourceError carries one actionable line; deeper causes are in the Dagster logs.
    while error.cause is not None and error.cls_name not in ("SourceError", "Failure"):
        error = error.cause
    if not error.message:
        return error.cls_name
    line = error.message.strip().splitlines()[-1]
    return re.sub(rf"^[\w.]*{re.escape(error.cls_name)}: ", "", line)
