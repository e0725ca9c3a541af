"""Runs whose process died are failed, with the reason, by whoever comes next: the `dead_runs_sensor` in the daemon
(or `dg dev`), or the CLI before its own run.

What Dagster does itself, from dagster.yaml's `run_monitoring`: a run stuck STARTING or CANCELING is failed after a
timeout, and a code server fails a run whose process it started and saw die. What it cannot see with its default
run launcher is a run whose worker died together with the code server and the daemon (a reboot, a killed process
group): run monitoring asks only a launcher with a worker health check (Kubernetes, ECS, Docker) and the hook for
one is not public Dagster API. So this asks the operating system (pipelines.core.liveness), never how long a run
has taken: a long run is not a dead one.
"""

from __future__ import annotations

import dagster as dg

from pipelines.core.liveness import TAG_PREFIX, Worker, hostname, this_process, why_gone

# The worker reports its pid in this engine event when a code server starts it (Dagster's gRPC server).
STARTED_PROCESS = "Started process for run"
# A run killed before it started is NOT_STARTED or STARTING; the CLI's runs carry their worker from creation.
CHECKED = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def worker_tags() -> dict[str, str]:
    """Tags that name this process as the worker of a run it executes in-process (the CLI)."""
    return this_process().tags()


def _launched_worker(instance: dg.DagsterInstance, run: dg.DagsterRun) -> tuple[Worker, float] | None:
    """The worker a code server of this machine started for `run` (its pid from the engine event), with when it was
    reported. Dagster's default launcher starts a run as a child of the code server that launched it, beside the
    daemon or `dg dev` whose sensor asks."""
    for record in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        if event is not None and event.message and event.message.startswith(STARTED_PROCESS):
            pid = event.engine_event_data.metadata.get("pid")
            if pid is not None and str(pid.value).isdigit():
                return Worker(hostname(), int(pid.value)), record.timestamp
    return None


def why_dead(instance: dg.DagsterInstance, run: dg.DagsterRun, launched_here: bool) -> str | None:
    """Why `run`'s worker can no longer finish it, or None when it is alive or cannot be checked from here. A run
    launched by a code server (no worker tags) is checked only where `launched_here`: by the sensor, which runs in
    the code servers of the deployment that launched it, not by a CLI that may share the instance from elsewhere."""
    worker = Worker.from_tags(run.tags)
    if worker is not None:
        return why_gone(worker)
    if not launched_here or run.tags.get(f"{TAG_PREFIX}host", hostname()) != hostname():
        return None
    launched = _launched_worker(instance, run)
    return why_gone(*launched) if launched else None


def fail_dead_runs(instance: dg.DagsterInstance, launched_here: bool = False) -> list[str]:
    """Mark every in-progress run whose worker is gone as failed, with the reason; one line per run failed."""
    failed = []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=CHECKED)):
        run = record.dagster_run
        reason = why_dead(instance, run, launched_here)
        if reason:
            message = f"run {run.run_id} was left {run.status.value} and is marked failed: its {reason}"
            instance.report_run_failed(run, message)
            # Its slot in the writers' pool goes back now, not when the daemon next sweeps (if one runs at all).
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            failed.append(message)
    return failed
