"""Runs whose process died are failed by whoever comes next: Dagster's run monitoring in the daemon, or the CLI.

`dagster.yaml` names `LivenessRunLauncher` as the instance's run launcher and turns run monitoring on:
the daemon then asks, every poll, whether each STARTED run's worker is alive, and fails the dead ones
with the reason, so the queue moves on. Dagster's default launcher cannot answer that question; this one
answers it from the operating system (pipelines.core.liveness), never from how long a run has taken.
"""

from __future__ import annotations

import dagster as dg
from dagster._core.events import DagsterEventType
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, LaunchRunContext, WorkerStatus
from dagster._core.storage.dagster_run import DagsterRun, DagsterRunStatus, RunsFilter

from pipelines.core.liveness import TAG_PREFIX, Worker, boot_id, hostname, this_process, why_gone

# The worker reports its pid in this engine event when a code server starts it (dagster._grpc.impl).
STARTED_PROCESS = "Started process for run"
# A run killed before it started is NOT_STARTED or STARTING; the CLI's runs carry their worker from creation.
CHECKED = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]


def worker_tags() -> dict[str, str]:
    """Tags that name this process as the worker of a run it executes in-process (the CLI)."""
    return this_process().tags()


def _launched_worker(instance: dg.DagsterInstance, run: DagsterRun) -> tuple[Worker, float] | None:
    """The worker a code server started for `run` (its pid from the engine event), with when it was reported."""
    host = run.tags.get(f"{TAG_PREFIX}host")
    if host is None:
        return None
    for record in instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        if event is not None and event.message and event.message.startswith(STARTED_PROCESS):
            pid = event.engine_event_data.metadata.get("pid")
            if pid is not None and str(pid.value).isdigit():
                return Worker(host, int(pid.value), run.tags.get(f"{TAG_PREFIX}boot_id")), record.timestamp
    return None


def why_dead(instance: dg.DagsterInstance, run: DagsterRun) -> str | None:
    """Why `run`'s worker can no longer finish it, or None when it is alive or cannot be checked from here."""
    worker = Worker.from_tags(run.tags)
    if worker is not None:
        return why_gone(worker)
    launched = _launched_worker(instance, run)
    return why_gone(*launched) if launched else None


def fail_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark every in-progress run whose worker is gone as failed, with the reason; one line per run failed."""
    failed = []
    for record in instance.get_run_records(filters=RunsFilter(statuses=CHECKED)):
        run = record.dagster_run
        reason = why_dead(instance, run)
        if reason:
            message = f"run {run.run_id} was left {run.status.value} and is marked failed: its {reason}"
            instance.report_run_failed(run, message)
            # Its slot in the writers' pool goes back now, not when the daemon next sweeps (if one runs at all).
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            failed.append(message)
    return failed


class LivenessRunLauncher(DefaultRunLauncher):
    """Dagster's default launcher, plus a worker health check that run monitoring calls."""

    def launch_run(self, context: LaunchRunContext) -> None:
        # The code servers of a default launcher run beside it (`dg dev`, the daemon's workspace): the
        # worker's host and boot are this process's, its pid arrives later in an engine event.
        host_tags = {f"{TAG_PREFIX}host": hostname()[:63], **({f"{TAG_PREFIX}boot_id": boot_id()} if boot_id() else {})}
        self._instance.add_run_tags(context.dagster_run.run_id, host_tags)
        super().launch_run(context._replace(dagster_run=self._instance.get_run_by_id(context.dagster_run.run_id)))

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        reason = why_dead(self._instance, run)
        if reason:
            return CheckRunHealthResult(WorkerStatus.FAILED, f"its {reason}")
        return CheckRunHealthResult(WorkerStatus.RUNNING)
