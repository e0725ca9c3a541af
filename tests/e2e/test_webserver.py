"""The Dagster UI end to end: `dg dev` (webserver + daemon) on a free loopback port with a fresh
DAGSTER_HOME on the real history, what the UI shows read through the webserver's GraphQL API,
a partition re-run as the UI launches it, and both processes shut down."""

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

import pytest
from conftest import liger_csv, liger_row

from pipelines.core import settings
from pipelines.statistics import db

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

    def wait_for_runs(self, wanted, count: int = 1) -> list[dict]:
        """Poll until at least `count` runs `wanted` picks are present and all finished."""
        deadline = time.monotonic() + RUN_SECONDS
        while time.monotonic() < deadline:
            runs = [run for run in self.runs() if wanted(run)]
            if len(runs) >= count and all(run["status"] in TERMINAL for run in runs):
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


PARTITIONS = """
query Partitions {
  assetNodeOrError(assetKey: {path: ["raw_snapshots"]}) { ... on AssetNode {
    partitionKeys
    partitionStats { numMaterialized numPartitions }
    assetMaterializations(limit: 1000) { partition runId metadataEntries { label ... on IntMetadataEntry { intValue } } }
  } }
}"""


def test_ui_shows_a_partition_per_upstream_version_and_a_new_commit_adds_one_run(real_bundle, tmp_path):
    """`dg dev` on the real history: the sensor's first tick registers 40 partitions and starts one run that
    stages them all, with every check; the UI shows each partition materialized with its counts; one partition
    re-run from the UI stages it alone; a new upstream commit adds one partition and one run, nothing else."""
    upstream = tmp_path / "upstream"
    subprocess.run(["git", "clone", "--quiet", "--branch", "main", str(real_bundle), str(upstream)], check=True)
    warehouse = tmp_path / "warehouse"
    port = free_port()
    home = instance_home(tmp_path)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(warehouse),
        "LIGER_SOURCE": str(upstream),
        "LIGER_CACHE_DIR": str(tmp_path / "cache"),
        "LIGER_SENSOR_INTERVAL_S": "20",
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
        assert entry["name"] == "liger_warehouse", "the code location's fixed name ([tool.dg.project] code_location_name)"
        [repository] = entry["locationOrLoadError"]["repositories"]
        # The upstream sensor and the one that fails dead runs run by default; declarative automation waits to be
        # turned on, as Dagster's own does.
        assert {s["name"]: s["sensorState"]["status"] for s in repository["sensors"]} == {
            "dead_runs_sensor": "RUNNING",
            "upstream_data_sensor": "RUNNING",
            "warehouse_automation": "STOPPED",
        }
        [schedule] = repository["schedules"]
        assert (schedule["cronSchedule"], schedule["executionTimezone"], schedule["scheduleState"]["status"]) == (
            "0 6 * * *",
            "UTC",
            "RUNNING",
        )
        nodes = state["assetNodes"]
        assert {n["groupName"] for n in nodes} == {"source", "tables", "statistics", "exports"}
        assert all(n["description"] for n in nodes)
        checks = {c["name"] for n in nodes for c in n["assetChecksOrError"]["checks"]}
        assert any(c["blocking"] for n in nodes for c in n["assetChecksOrError"]["checks"])

        [first] = dagster.wait_for_runs(by_sensor)
        assert first["status"] == "SUCCESS", (first, log.read_text()[-3000:])
        events = dagster.graphql(CHECK_EVALUATIONS, {"runId": first["runId"]})["logsForRun"]["events"]
        evaluations = {e["evaluation"]["checkName"]: e["evaluation"]["success"] for e in events if "evaluation" in e}
        assert set(evaluations) == checks and all(evaluations.values()), evaluations

        node = dagster.graphql(PARTITIONS)["assetNodeOrError"]
        keys = node["partitionKeys"]
        assert len(keys) == 40 and node["partitionStats"] == {"numMaterialized": 40, "numPartitions": 40}
        counts = materialized_counts(node)
        assert set(counts) == set(keys) and all(len(c) == 1 for c in counts.values()), {k: c for k, c in counts.items() if len(c) != 1}
        assert all(c[0]["dagster/row_count"] == c[0]["accepted"] + c[0]["quarantined"] > 0 for c in counts.values())

        # One partition re-run from the UI (its "Materialize" with that partition): it alone is staged again.
        params = {
            "selector": {
                "repositoryLocationName": entry["name"],
                "repositoryName": repository["name"],
                "pipelineName": "__ASSET_JOB",
                "assetSelection": [{"path": ["raw_snapshots"]}],
            },
            "mode": "default",
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": keys[3]}]},
        }
        launched = dagster.graphql(LAUNCH, {"executionParams": params})["launchPipelineExecution"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        [rerun] = dagster.wait_for_runs(lambda run: run["runId"] == launched["run"]["runId"])
        assert rerun["status"] == "SUCCESS", log.read_text()[-3000:]
        counts = materialized_counts(dagster.graphql(PARTITIONS)["assetNodeOrError"])
        assert {k for k, c in counts.items() if len(c) == 2} == {keys[3]}

        staged = {p.name: p.stat().st_mtime_ns for p in (warehouse / "_staging").iterdir()}
        data = upstream / "benchmark" / "data" / "all_benchmark_data.csv"
        lines = data.read_text().splitlines(keepends=True)
        data.write_text("".join(lines + [lines[-1].replace("2025", "2026", 1)]))
        subprocess.run(["git", "-C", str(upstream), "commit", "--quiet", "-am", "one more run"], check=True, env=GIT_IDENTITY)
        new = subprocess.run(["git", "-C", str(upstream), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
        runs = dagster.wait_for_runs(by_sensor, count=2)
        assert [r["status"] for r in runs] == ["SUCCESS", "SUCCESS"], log.read_text()[-3000:]
        [second] = [r for r in runs if r["runId"] != first["runId"]]
        new_key = f"{new[:12]}/all_benchmark_data.csv"
        assert {t["key"]: t["value"] for t in second["tags"]}["dagster/partition"] == new_key
        node = dagster.graphql(PARTITIONS)["assetNodeOrError"]
        assert node["partitionKeys"] == [*keys, new_key]
        counts = materialized_counts(node)
        assert len(counts[new_key]) == 1 and {k for k, c in counts.items() if len(c) > 1} == {keys[3]}
        # Nothing staged before was read or written again.
        assert {name: (warehouse / "_staging" / name).stat().st_mtime_ns for name in staged} == staged
    finally:
        stop(process)

    assert db.query(warehouse, "SELECT count(*) FROM snapshots").rows == [(41,)]
    # The runs were recorded in the temp instance, not in the project's.
    assert (home / "data" / "dagster" / "logs" / first["runId"]).is_dir()
    assert not (settings.PROJECT_ROOT / "data" / "dagster" / "logs" / first["runId"]).exists()


GIT_IDENTITY = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def by_sensor(run: dict) -> bool:
    return any(t["key"] == "dagster/sensor_name" and t["value"] == "upstream_data_sensor" for t in run["tags"])


def materialized_counts(node: dict) -> dict[str, list[dict]]:
    """Each partition's materializations, one per run, as their integer metadata. A run of a range records two on each
    partition (the run's data version, then the partition's own: pipelines/defs/source/assets.py), both with its
    counts: one run materialized it once."""
    counts: dict[str, dict[str, dict]] = {}
    for event in node["assetMaterializations"]:
        values = {e["label"]: e["intValue"] for e in event["metadataEntries"] if "intValue" in e}
        counts.setdefault(event["partition"], {}).setdefault(event["runId"], {}).update(values)
    return {partition: list(runs.values()) for partition, runs in counts.items()}


TICKS = """
query Ticks($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) { __typename ... on Sensor {
    sensorState { ticks(limit: 10) { status skipReason error { message } } } } }
}"""


def test_the_readme_ui_line_on_a_warehouse_built_from_another_source_ticks_without_failing(upstream_repo, tmp_path):
    """The README's order offline: `materialize` with LIGER_SOURCE (the bundle), then `DAGSTER_HOME=$PWD dg dev`
    without it. The definitions read the warehouse's own source, so the sensor's tick asks it and is skipped (nothing
    new), never failed; the UI serves."""
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="torch"))}, "data")
    warehouse = tmp_path / "warehouse"
    home = instance_home(tmp_path)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LIGER_")},
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(warehouse),
        "LIGER_CACHE_DIR": str(tmp_path / "cache"),
        "LIGER_SENSOR_INTERVAL_S": "10",
        "VIRTUAL_ENV": str(Path(sys.executable).parent.parent),
    }
    built = subprocess.run(
        [sys.executable, "-m", "pipelines", "materialize"],
        env={**env, "LIGER_SOURCE": str(upstream_repo.path)},
        cwd=settings.PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    port, log = free_port(), tmp_path / "dg-dev.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "dg"), "dev", "--host", HOST, "--port", str(port)],
            cwd=settings.PROJECT_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    dagster = Dagster(port, log)
    try:
        dagster.wait_until_serving(process)
        [entry] = dagster.graphql(WORKSPACE)["workspaceOrError"]["locationEntries"]
        [repository] = entry["locationOrLoadError"]["repositories"]
        selector = {"repositoryLocationName": entry["name"], "repositoryName": repository["name"], "sensorName": "upstream_data_sensor"}
        deadline = time.monotonic() + STARTUP_SECONDS
        ticks: list[dict] = []
        while not ticks and time.monotonic() < deadline:
            time.sleep(2)
            ticks = dagster.graphql(TICKS, {"selector": selector})["sensorOrError"]["sensorState"]["ticks"]
        assert ticks, f"no sensor tick within {STARTUP_SECONDS}s:\n{log.read_text()[-3000:]}"
        assert [t["status"] for t in ticks] == ["SKIPPED"] * len(ticks), ticks
        # Skipped because nothing is new at the warehouse's own source, not because it asked another one.
        assert all("cannot ask the source" not in t["skipReason"] for t in ticks), ticks
        assert not any(run for run in dagster.runs() if by_sensor(run))
    finally:
        stop(process)
