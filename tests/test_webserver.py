"""The Dagster UI end to end: `dg dev` (webserver + daemon) on a free loopback port with a fresh
DAGSTER_HOME, every asset launched through the webserver's GraphQL API as the UI's
"Materialize all" does, the warehouse checked, and both processes shut down."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import polars as pl
import pytest
from conftest import liger_csv, liger_row

from pipelines.lib import settings, warehouse_db

# Slow tier (the Dagster webserver and daemon in processes of their own): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow

DATA = "benchmark/data/all_benchmark_data.csv"
HOST = "127.0.0.1"
STARTUP_SECONDS = 240
RUN_SECONDS = 600
SHUTDOWN_SECONDS = 30
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}

LAUNCH = """
mutation Launch($executionParams: ExecutionParams!) {
  launchPipelineExecution(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""
WORKSPACE = """{
  workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError {
    ... on RepositoryLocation { repositories { name
      sensors { name sensorState { status } }
      schedules { name cronSchedule executionTimezone scheduleState { status } } } }
    ... on PythonError { message } } } } }
  assetNodes { assetKey { path } isExecutable groupName description
    assetChecksOrError { ... on AssetChecks { checks { name blocking } } } }
}"""
RUNS = """{ runsOrError { ... on Runs { results { runId status jobName tags { key value } } } } }"""
CHECK_EVALUATIONS = """
query Logs($runId: ID!) {
  logsForRun(runId: $runId) { ... on EventConnection { events {
    __typename
    ... on AssetCheckEvaluationEvent { evaluation { checkName success } }
  } } }
}"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def instance_home(root: Path) -> Path:
    """A DAGSTER_HOME holding the project's dagster.yaml, its storage moved under `root`."""
    home = root / "dagster-home"
    home.mkdir()
    text = (settings.PROJECT_ROOT / "dagster.yaml").read_text()
    # `dg dev` runs from the project root, so relative storage would land in the project.
    moved = text.replace("base_dir: data/", f"base_dir: {home}/data/")
    assert moved.count(str(home)) == text.count("base_dir:"), "every storage base_dir must move to the temp home"
    (home / "dagster.yaml").write_text(moved)
    return home


class Dagster:
    def __init__(self, port: int, log: Path):
        self.url = f"http://{HOST}:{port}"
        self.log = log

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        assert "errors" not in answer, answer["errors"]
        return answer["data"]

    def wait_until_serving(self, process: subprocess.Popen) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"dg dev exited with {process.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/server_info", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1)
        pytest.fail(f"the webserver did not answer within {STARTUP_SECONDS}s:\n{self.log.read_text()[-3000:]}")

    def runs(self) -> list[dict]:
        return self.graphql(RUNS)["runsOrError"]["results"]

    def wait_for_runs(self, wanted) -> list[dict]:
        """Poll until the runs `wanted` picks are present and all finished."""
        deadline = time.monotonic() + RUN_SECONDS
        while time.monotonic() < deadline:
            runs = [run for run in self.runs() if wanted(run)]
            if runs and all(run["status"] in TERMINAL for run in runs):
                return runs
            time.sleep(2)
        pytest.fail(f"runs did not finish within {RUN_SECONDS}s: {self.runs()}\n{self.log.read_text()[-3000:]}")


def stop(process: subprocess.Popen) -> None:
    """Ask the whole process group (dg dev, webserver, daemon, code server, runs) to stop, then make it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=SHUTDOWN_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # children that outlived dg dev
    except ProcessLookupError:
        pass
    process.wait(timeout=SHUTDOWN_SECONDS)


def test_ui_materializes_everything_through_graphql(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1"))}, "data")
    warehouse = tmp_path / "warehouse"
    port = free_port()
    home = instance_home(tmp_path)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(warehouse),
        "LIGER_SOURCE": str(upstream_repo.path),
        "LIGER_CACHE_DIR": str(tmp_path / "cache"),
        "VIRTUAL_ENV": str(Path(sys.executable).parent.parent),
    }
    log = tmp_path / "dg-dev.log"
    dg = Path(sys.executable).parent / "dg"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [str(dg), "dev", "--host", HOST, "--port", str(port)],
            cwd=settings.PROJECT_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    dagster = Dagster(port, log)
    try:
        dagster.wait_until_serving(process)
        state = dagster.graphql(WORKSPACE)
        [entry] = state["workspaceOrError"]["locationEntries"]
        [repository] = entry["locationOrLoadError"]["repositories"]
        assert {s["name"]: s["sensorState"]["status"] for s in repository["sensors"]} == {"upstream_data_sensor": "RUNNING"}
        [schedule] = repository["schedules"]
        assert (schedule["cronSchedule"], schedule["executionTimezone"], schedule["scheduleState"]["status"]) == (
            "0 6 * * *",
            "UTC",
            "RUNNING",
        )

        nodes = state["assetNodes"]
        assert {n["groupName"] for n in nodes} == {"source", "tables", "statistics", "exports"}
        assert all(n["description"] for n in nodes)
        assets = [{"path": n["assetKey"]["path"]} for n in nodes if n["isExecutable"]]
        checks = [
            {"assetKey": {"path": n["assetKey"]["path"]}, "name": c["name"]} for n in nodes for c in n["assetChecksOrError"]["checks"]
        ]
        assert any(c["blocking"] for n in nodes for c in n["assetChecksOrError"]["checks"])

        params = {
            "selector": {
                "repositoryLocationName": entry["name"],
                "repositoryName": repository["name"],
                "pipelineName": "__ASSET_JOB",
                "assetSelection": assets,
                "assetCheckSelection": checks,
            },
            "mode": "default",
            "runConfigData": {},
            "executionMetadata": {"tags": []},
        }
        launched = dagster.graphql(LAUNCH, {"executionParams": params})["launchPipelineExecution"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]

        # A fresh instance has the sensor on: its first tick sees an empty warehouse and asks for a run too.
        def ours_or_the_sensors(run: dict) -> bool:
            tags = {t["key"]: t["value"] for t in run["tags"]}
            return run["runId"] == run_id or tags.get("dagster/sensor_name") == "upstream_data_sensor"

        runs = dagster.wait_for_runs(ours_or_the_sensors)
        assert {r["jobName"] for r in runs} == {"__ASSET_JOB", "ingest_everything"}
        assert all(r["status"] == "SUCCESS" for r in runs), (runs, log.read_text()[-3000:])

        events = dagster.graphql(CHECK_EVALUATIONS, {"runId": run_id})["logsForRun"]["events"]
        evaluations = {e["evaluation"]["checkName"]: e["evaluation"]["success"] for e in events if "evaluation" in e}
        assert set(evaluations) == {c["name"] for c in checks}
        assert all(evaluations.values()), evaluations
    finally:
        stop(process)

    assert pl.read_parquet(warehouse / "runs.parquet").height == 2
    assert warehouse_db.query(warehouse, "SELECT count(*) FROM comparable_groups").rows == [(1,)]
    assert (warehouse / "exports" / "runs.ndjson").read_text().count("\n") == 2
    # The run was recorded in the temp instance, not in the project's.
    assert (home / "data" / "dagster" / "logs" / run_id).is_dir()
    assert not (settings.PROJECT_ROOT / "data" / "dagster" / "logs" / run_id).exists()
