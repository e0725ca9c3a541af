"""The sensor that fails runs whose worker died with the daemon (pipelines/orchestration/run_health.py says why a
sensor: Dagster's run monitoring has no public hook for it)."""

import dagster as dg

from pipelines.orchestration.run_health import fail_dead_runs

# As often as Dagster's run monitoring polls (dagster.yaml's poll_interval_seconds): a queue behind a dead run waits
# at most this long once the daemon is back.
DEAD_RUNS_INTERVAL_S = 30


@dg.sensor(minimum_interval_seconds=DEAD_RUNS_INTERVAL_S, default_status=dg.DefaultSensorStatus.RUNNING)
def dead_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """Fail, with the reason, each run in progress whose worker process is gone (killed with the daemon, a reboot),
    so that the one-run queue behind it moves on; a live run, however long, is left alone."""
    # Runs Dagster's default launcher started are children of a code server beside this one; another launcher's
    # (one pod per run) are its own health check's to judge.
    failed = fail_dead_runs(context.instance, launched_here=isinstance(context.instance.run_launcher, dg.DefaultRunLauncher))
    for line in failed:
        context.log.warning(line)
    return dg.SkipReason("\n".join(failed) if failed else "no run in progress has lost its worker")
