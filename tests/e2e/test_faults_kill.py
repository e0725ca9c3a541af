"""Faults: a run killed at random points, the ingest step by step in a child process and the whole
`python -m pipelines materialize`. After each kill, the previous warehouse (or the complete new one)
reads and passes its checks, and the next normal run repairs everything: its tables equal those of
a clean ingest."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest
from fault_harness import ON_TWO_WORKERS, History, commit_history_for_workers, start_ingest, start_materialize, survivors
from robustness_tally import trial

# Slow tier (faults injected into whole ingests, many of them in processes of their own): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow

pytest_plugins = ["robustness_report"]

KILLS = int(os.environ.get("ROBUSTNESS_KILLS") or (21 if os.environ.get("CI") else 8))
SEED = int(os.environ.get("ROBUSTNESS_SEED") or time.time_ns() % 100_000)
DAGSTER_KILLS = int(os.environ.get("ROBUSTNESS_DAGSTER_KILLS") or 2)


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> History:
    return History(tmp_path_factory.mktemp("faults-history"))


def timed_run(history: History, target: Path) -> float:
    """How long an uninterrupted child run of the new commits takes, from the go."""
    warehouse, cache = history.copy(target)
    process = start_ingest(warehouse, str(history.repo.path), cache)
    started = time.monotonic()
    process.stdin.write("go\n")
    process.stdin.flush()
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0 and out.split()[-1] == "done", err
    return time.monotonic() - started


def test_sigkill_at_random_points_leaves_the_previous_warehouse_and_the_next_run_repairs_it(history, tmp_path):
    duration = timed_run(history, tmp_path / "timed")
    history.assert_repaired(tmp_path / "timed" / "warehouse", tmp_path / "timed" / "cache")
    chance = random.Random(SEED)
    kills, attempts, phases = 0, 0, []
    while kills < KILLS:
        attempts += 1
        assert attempts < 4 * KILLS, f"only {kills} of {attempts} runs were killed before they ended (seed {SEED})"
        warehouse, cache = history.copy(tmp_path / "run")
        process = start_ingest(warehouse, str(history.repo.path), cache)
        process.stdin.write("go\n")
        process.stdin.flush()
        started = time.monotonic()
        time.sleep(chance.uniform(0, duration))
        process.send_signal(signal.SIGKILL)
        out, err = process.communicate(timeout=120)
        if process.returncode != -signal.SIGKILL:
            duration = min(duration, time.monotonic() - started)  # it finished first: aim earlier
            continue
        kills += 1
        phase = out.split()[-1]
        phases.append(phase)
        with trial("fault", f"SIGKILL at a random point ({phase})"):
            history.assert_previous_or_complete(warehouse)
            history.assert_repaired(warehouse, cache)
    print(f"{kills} kills (seed {SEED}) by phase: {dict(sorted((p, phases.count(p)) for p in set(phases)))}")


def test_sigkill_of_python_m_pipelines_materialize_at_random_points(history, tmp_path):
    """The whole Dagster job (every asset, exports and report included), killed at random times."""
    warehouse, cache = history.copy(tmp_path / "timed")
    started = time.monotonic()
    process = start_materialize(warehouse, str(history.repo.path), cache, tmp_path / "timed" / "home")
    assert process.wait(timeout=600) == 0, process.stderr.read()[-2000:]
    duration = time.monotonic() - started
    chance = random.Random(SEED + 1)
    kills = attempts = 0
    while kills < DAGSTER_KILLS:
        attempts += 1
        assert attempts < 4 * DAGSTER_KILLS, f"only {kills} of {attempts} runs were killed before they ended (seed {SEED})"
        warehouse, cache = history.copy(tmp_path / "run")
        started = time.monotonic()
        process = start_materialize(warehouse, str(history.repo.path), cache, tmp_path / "run" / "home")
        # Not before 30%: the first seconds go to importing Dagster, before any write.
        time.sleep(chance.uniform(0.3 * duration, duration))
        process.send_signal(signal.SIGKILL)
        if process.wait(timeout=120) != -signal.SIGKILL:
            duration = min(duration, time.monotonic() - started)  # it finished first: aim earlier
            continue
        kills += 1
        with trial("fault", "SIGKILL of python -m pipelines materialize"):
            assert survivors(warehouse) == [], "processes of the killed run are still alive"
            history.assert_previous_or_complete(warehouse)
            history.assert_repaired(warehouse, cache)


def test_a_sigkill_while_staging_on_two_workers_leaves_no_process_behind(upstream_repo, tmp_path, monkeypatch):
    commit_history_for_workers(upstream_repo)
    warehouse = tmp_path / "warehouse"
    for name, value in ON_TWO_WORKERS.items():
        monkeypatch.setenv(name, value)
    process = start_materialize(warehouse, str(upstream_repo.path), tmp_path / "cache", tmp_path / "home")
    deadline = time.monotonic() + 120
    while len([p for p in survivors(warehouse, 0) if "spawn_main" in p]) < 2:
        assert process.poll() is None and time.monotonic() < deadline, "the staging workers never started"
        time.sleep(0.1)
    time.sleep(1.0)  # into the staging itself, past the workers' start
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    left = survivors(warehouse)
    assert left == [], "processes of the killed run are still alive"
