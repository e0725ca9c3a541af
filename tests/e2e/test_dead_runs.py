"""A run whose process was killed is failed, with the reason, by whoever comes next (the CLI or the daemon's
run monitoring), so the one-run queue never jams behind it; a live run, however long, is left alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from conftest import git, liger_csv, liger_row
from dagster._core.events import DagsterEventType
from test_kill import start_parked, wait_for
from test_webserver import instance_home, stop

from pipelines.core import layout, liveness, settings
from pipelines.storage import store

DATA = "benchmark/data/all_benchmark_data.csv"
DAEMON_SECONDS = 300
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def daemon_setup(upstream_repo, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(warehouse, DAGSTER_HOME whose run monitoring polls every 3 s, the daemon's environment)."""
    warehouse = tmp_path / "warehouse"
    home = instance_home(tmp_path)
    yaml = home / "dagster.yaml"
    yaml.write_text(yaml.read_text().replace("poll_interval_seconds: 30", "poll_interval_seconds: 3"))
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(warehouse),
        "LIGER_SOURCE": str(upstream_repo.path),
        "LIGER_CACHE_DIR": str(tmp_path / "cache"),
    }
    return warehouse, home, env


def run_records(home: Path) -> list:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return list(instance.get_run_records())


def failure_message(home: Path, run_id: str) -> str:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        [event] = instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE)
    return event.user_message or event.dagster_event.message


def test_liveness_tells_a_live_worker_from_a_dead_one():
    process = subprocess.Popen(["sleep", "60"])
    try:
        worker = liveness.Worker(liveness.hostname(), process.pid, liveness.boot_id(), _start_ticks(process.pid))
        assert liveness.why_gone(worker) is None
        assert liveness.Worker.from_tags(worker.tags()) == worker
        # The same pid started at another time is another process.
        assert "another process" in liveness.why_gone(liveness.Worker(worker.host, worker.pid, worker.boot_id, worker.start_ticks + 1))
        # A run reported before this process started was not run by it.
        assert "started after the run" in liveness.why_gone(liveness.Worker(worker.host, worker.pid), started_at=time.time() - 3600)
        assert "restart of the machine" in liveness.why_gone(liveness.Worker(worker.host, worker.pid, "another-boot"))
        # What cannot be checked from here is never called dead.
        assert liveness.why_gone(liveness.Worker("some-other-host", worker.pid)) is None
        process.kill()
        time.sleep(0.5)
        assert "not been reaped" in liveness.why_gone(worker)
    finally:
        process.kill()
        process.wait()
    assert "is gone" in liveness.why_gone(worker)


def _start_ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


@pytest.mark.slow
def test_the_cli_fails_a_killed_run_and_goes_ahead(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1"))}, "one")
    warehouse = tmp_path / "warehouse"
    home = instance_home(tmp_path)
    process, marker = start_parked(layout.CURRENT, warehouse, upstream_repo.path, tmp_path)
    try:
        wait_for(marker, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    [killed] = run_records(home)
    assert killed.dagster_run.status == dg.DagsterRunStatus.STARTED, "the killed run should be left STARTED"

    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(warehouse),
        "LIGER_SOURCE": str(upstream_repo.path),
        "LIGER_CACHE_DIR": str(tmp_path / "cache"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "pipelines", "materialize"], env=env, cwd=settings.PROJECT_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"run {killed.dagster_run.run_id} was left STARTED and is marked failed" in result.stderr
    runs = {r.dagster_run.run_id: r.dagster_run.status for r in run_records(home)}
    assert runs.pop(killed.dagster_run.run_id) == dg.DagsterRunStatus.FAILURE
    assert list(runs.values()) == [dg.DagsterRunStatus.SUCCESS]
    assert f"process {process.pid} on {liveness.hostname()} is gone" in failure_message(home, killed.dagster_run.run_id)


@pytest.mark.slow
def test_the_daemon_fails_a_run_killed_with_everything_and_the_next_run_succeeds(upstream_repo, tmp_path):
    """The real daemon launches a run; while it is mid-flight every process dies at once (the daemon, its code
    server, the run's worker and steps), as in a reboot. The restarted daemon's run monitoring marks the run
    failed with the reason, and the next requested run is launched and succeeds."""
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1"))}, "one")
    warehouse, home, env = daemon_setup(upstream_repo, tmp_path)
    bin_dir = Path(sys.executable).parent

    def start_daemon(log: Path) -> subprocess.Popen:
        with open(log, "wb") as output:
            return subprocess.Popen(
                # No target: from the root it loads pyproject.toml's location, liger_warehouse, as `dg dev` names it.
                [str(bin_dir / "dagster-daemon"), "run"],
                cwd=settings.PROJECT_ROOT,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    # Holding the writer lock parks the sensor's first run inside its first step, mid-flight.
    with store.writer_lock(warehouse):
        log = tmp_path / "daemon-1.log"
        daemon = start_daemon(log)
        try:
            first, pid = _wait_for_worker(home, daemon, log)
            # A live run, however long it waits, is not failed by run monitoring (several polls pass here).
            time.sleep(10)
            assert {r.dagster_run.run_id: r.dagster_run.status for r in run_records(home)} == {first: dg.DagsterRunStatus.STARTED}
        finally:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait(timeout=60)
    assert {r.dagster_run.run_id: r.dagster_run.status for r in run_records(home)} == {first: dg.DagsterRunStatus.STARTED}

    log = tmp_path / "daemon-2.log"
    daemon = start_daemon(log)
    try:
        launched = subprocess.run(
            # The partition the sensor registered for the killed run, staged again by this one.
            [str(bin_dir / "dagster"), "job", "launch", "-j", "ingest_everything"]
            + ["--tags", json.dumps({"dagster/partition": f"{git(upstream_repo.path, 'rev-parse', 'HEAD')[:12]}/all_benchmark_data.csv"})],
            cwd=settings.PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert launched.returncode == 0, launched.stderr[-3000:]
        runs = _wait_until_finished(home, daemon, log, count=2)
    finally:
        stop(daemon)
    assert runs[first] == dg.DagsterRunStatus.FAILURE, (runs, log.read_text()[-3000:])
    assert f"process {pid} on {liveness.hostname()} is gone" in failure_message(home, first)
    [second] = [run_id for run_id in runs if run_id != first]
    assert runs[second] == dg.DagsterRunStatus.SUCCESS, (runs, log.read_text()[-3000:])
    assert (warehouse / "runs.parquet").is_file()


def _wait_for_worker(home: Path, daemon: subprocess.Popen, log: Path) -> tuple[str, int]:
    """The first run that reached a step, and the pid of its worker."""
    deadline = time.monotonic() + DAEMON_SECONDS
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            pytest.fail(f"the daemon exited with {daemon.returncode}:\n{log.read_text()[-3000:]}")
        with dg.DagsterInstance.from_config(str(home)) as instance:
            for record in instance.get_run_records():
                run_id = record.dagster_run.run_id
                steps = instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)
                started = [e for e in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT) if "(pid:" in e.user_message]
                if steps and started:
                    return run_id, int(started[0].dagster_event.engine_event_data.metadata["pid"].value)
        time.sleep(1)
    pytest.fail(f"no run reached a step within {DAEMON_SECONDS}s:\n{log.read_text()[-3000:]}")


def _wait_until_finished(home: Path, daemon: subprocess.Popen, log: Path, count: int) -> dict[str, dg.DagsterRunStatus]:
    deadline = time.monotonic() + DAEMON_SECONDS
    runs: dict[str, dg.DagsterRunStatus] = {}
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            pytest.fail(f"the daemon exited with {daemon.returncode}:\n{log.read_text()[-3000:]}")
        runs = {r.dagster_run.run_id: r.dagster_run.status for r in run_records(home)}
        if len(runs) >= count and all(status in FINISHED for status in runs.values()):
            return runs
        time.sleep(2)
    pytest.fail(f"runs did not finish within {DAEMON_SECONDS}s: {runs}\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_a_daemon_run_whose_worker_is_killed_leaves_no_step_writing_after_it_failed(upstream_repo, tmp_path):
    """Only the run's worker is killed (the daemon lives on): its step processes die with it, so after run
    monitoring fails the run nothing of it writes, not even once the lock it waited for is free."""
    upstream_repo.commit({DATA: liger_csv(liger_row())}, "one")
    warehouse, home, env = daemon_setup(upstream_repo, tmp_path)
    log = tmp_path / "daemon.log"
    with open(log, "wb") as output:
        daemon = subprocess.Popen(
            [str(Path(sys.executable).parent / "dagster-daemon"), "run"],
            cwd=settings.PROJECT_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        with store.writer_lock(warehouse):  # parks the run's first writing step, mid-flight
            run_id, worker = _wait_for_worker(home, daemon, log)
            with dg.DagsterInstance.from_config(str(home)) as instance:
                pids = {
                    int(e.dagster_event.engine_event_data.metadata["pid"].value)
                    for e in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT)
                    if "(pid:" in e.user_message and "pid" in e.dagster_event.engine_event_data.metadata
                }
            os.kill(worker, signal.SIGKILL)
            deadline = time.monotonic() + 60
            while {r.dagster_run.run_id: r.dagster_run.status for r in run_records(home)}[run_id] != dg.DagsterRunStatus.FAILURE:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(1)
            time.sleep(2)
            alive = [pid for pid in pids if liveness._stat(pid) is not None and liveness._stat(pid)[0] != "Z"]
            assert alive == [], f"processes of the failed run are alive: {alive}"
        time.sleep(5)  # the lock is free: a step still alive would write now
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION) == []
    finally:
        stop(daemon)
    assert not (warehouse / "_source.json").exists()
