"""Small warehouses for the statistics tests: run rows written by hand (`run`), the fixture's runs with the
values SPEC section 6 is checked against, and the `warehouse_dir` fixture that builds their database, for
test modules that load this with `pytest_plugins = ["statistics_warehouse"]`."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import polars as pl
import pytest

from pipelines.core import canonical, schemas, workload
from pipelines.statistics import database_build, db

BASELINES = ("huggingface", "torch")
MIB = 2**20


def run(
    provider: str,
    value: float | None,
    *,
    run_id: str | None = None,
    kernel: str = "rms_norm",
    pass_: str = "full",
    metric: str = "speed",
    unit: str | None = None,
    gpu: str = "A100",
    x: tuple[str, int] = ("batch", 4),
    fixed: dict | None = None,
    observed: str = "2024-02-01",
    interval: tuple[float, float] | None = None,
    status: str = "passed",
    version: str = "0.2",
    backend: str = "triton",
) -> dict:
    """One run row; p20 = p80 = value (no noise) unless `interval` says otherwise. `backend` names the file it
    comes from as upstream does (`all_benchmark_data_<backend>.csv`; `triton`'s is `all_benchmark_data.csv`)."""
    fixed = {"hidden": 4096} if fixed is None else fixed
    x_key, x_value = x
    params = {**fixed, x_key: x_value}
    slug = workload.workload_slug(params)
    workload_digest = canonical.digest(params)
    p20, p80 = interval or (value, value)
    unit = unit or {"speed": "ns", "memory": "bytes"}[metric]
    return {
        "run_id": run_id or f"{kernel}/{pass_}/{metric}/{provider}/{backend}/{gpu}/{slug}/{observed}",
        "kernel": kernel,
        "provider": provider,
        "pass": pass_,
        "metric": metric,
        "status": status,
        "observed_at": dt.datetime.fromisoformat(observed).replace(tzinfo=dt.UTC),
        "liger_version": version,
        "gpu_name": gpu,
        "x_name": x_key,
        "x_value": str(x_value),
        "workload": canonical.canonical_json(params),
        "workload_slug": slug,
        "workload_digest": workload_digest,
        "protocol_digest": f"protocol-{metric}-{pass_}",
        "environment_digest": f"environment-{gpu}",
        "group_id": canonical.digest([kernel, workload_digest, pass_, metric, gpu]),
        "value": None if status == "failed" else value,
        "p20": None if status == "failed" else p20,
        "p80": None if status == "failed" else p80,
        "unit": unit,
        "x_key": x_key,
        "sweep_workload": canonical.canonical_json(fixed),
        "sweep_digest": canonical.digest(fixed),
        "source_file": "all_benchmark_data.csv" if backend == "triton" else f"all_benchmark_data_{backend}.csv",
        "backend": backend,
        "stream": "data",
    }


SWEEP_SEQ = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
HF_OVER_LIGER = (1.25, 1.6, 2.0, 2.5, 1.25, 1.6, 2.0, 2.5)  # product 10 per half: geomean 10 ** 0.25
SWIGLU = {"kernel": "swiglu", "pass_": "forward", "gpu": "H100", "fixed": {"batch": 2}, "observed": "2024-05-01"}


def fixture_runs() -> list[dict]:
    runs = [
        # Group A (batch 4): two huggingface runs, torch, liger with a tie on observed_at and a later failure.
        run("huggingface", 200, run_id="a-hf-1", observed="2024-01-01", interval=(190, 210), version="0.1"),
        run("huggingface", 180, run_id="a-hf-2", interval=(175, 185)),
        run("torch", 120, run_id="a-torch-0", observed="2024-01-01", interval=(119, 121), version="0.1"),
        run("torch", 150, run_id="a-torch-1", interval=(145, 155)),
        run("liger", 120, run_id="a-liger-1", observed="2024-01-15", interval=(118, 122), version="0.1"),
        run("liger", 110, run_id="a-liger-2a", interval=(108, 121)),
        run("liger", 100, run_id="a-liger-2b", interval=(98, 102)),
        run("liger", None, run_id="a-liger-3", observed="2024-03-01", status="failed", version="0.3"),
        # Group B (batch 8): huggingface only failed, so torch is the baseline; liger ties it.
        run("huggingface", None, run_id="b-hf", x=("batch", 8), status="failed"),
        run("torch", 300, run_id="b-torch", x=("batch", 8), interval=(290, 310)),
        run("liger", 300, run_id="b-liger", x=("batch", 8), interval=(295, 305)),
        # Group C (batch 16): no baseline provider at all.
        run("liger", 50, run_id="c-liger", x=("batch", 16), interval=(49, 51)),
        run("triton", 60, run_id="c-triton", x=("batch", 16), interval=(59, 61)),
        # Group D (batch 32): huggingface alone, its own baseline.
        run("huggingface", 500, run_id="d-hf", x=("batch", 32)),
        # Group E (batch 64): nothing but a failed run.
        run("liger", None, run_id="e-liger", x=("batch", 64), status="failed"),
        # A metric of unknown direction: no ratio.
        run("huggingface", 10, run_id="t-hf", metric="throughput", unit="tokens/s", interval=(9, 11)),
        run("liger", 20, run_id="t-liger", metric="throughput", unit="tokens/s", interval=(19, 21)),
        # Memory: 2 MiB against 1 MiB.
        run("huggingface", 2 * MIB, metric="memory", x=("seq", 128), **SWIGLU),
        run("liger", 1 * MIB, metric="memory", x=("seq", 128), **SWIGLU),
    ]
    # A sweep over seq: liger faster than huggingface at all 8 points; torch slower at one, equal at one.
    for seq, hf_ratio in zip(SWEEP_SEQ, HF_OVER_LIGER, strict=True):
        runs.append(run("liger", 1_000_000, x=("seq", seq), **SWIGLU))
        runs.append(run("huggingface", 1_000_000 * hf_ratio, x=("seq", seq), **SWIGLU))
    runs.append(run("torch", 2_500_000, x=("seq", 128), **SWIGLU))
    runs.append(run("torch", 1_600_000, x=("seq", 256), **SWIGLU))
    return runs


def write_warehouse(warehouse_dir: Path, runs: list[dict]) -> None:
    warehouse_dir.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(runs, schema=schemas.RUNS).write_parquet(warehouse_dir / "runs.parquet")
    for table, schema in schemas.TABLES.items():
        if table != "runs":
            pl.DataFrame(schema=schema).write_parquet(warehouse_dir / f"{table}.parquet")


@pytest.fixture
def warehouse_dir(tmp_path: Path) -> Path:
    write_warehouse(tmp_path, fixture_runs())
    database_build.build_database(tmp_path, BASELINES)
    return tmp_path


def rows(warehouse_dir: Path, sql: str, params=None) -> list[dict]:
    return db.query(warehouse_dir, sql, params).records()


def by_provider(warehouse_dir: Path, group_run_id: str) -> dict[str, dict]:
    """provider_comparisons of the group holding `group_run_id`, keyed by provider."""
    found = rows(
        warehouse_dir,
        "SELECT * FROM provider_comparisons WHERE group_id = (SELECT group_id FROM runs WHERE run_id = ?)",
        [group_run_id],
    )
    return {row["provider"]: row for row in found}


def group_of(warehouse_dir: Path, group_run_id: str) -> dict | None:
    found = rows(
        warehouse_dir,
        "SELECT * FROM comparable_groups WHERE group_id = (SELECT group_id FROM runs WHERE run_id = ?)",
        [group_run_id],
    )
    return found[0] if found else None


def sigma(p20: float, p80: float) -> float:
    return (math.log(p80) - math.log(p20)) / 1.683


# One kernel benchmarked by two of upstream's files, as upstream does since the cuTile file appeared: the Triton file
# (all_benchmark_data.csv) and the cuTile file (all_benchmark_data_cutile.csv) each with its own torch and liger, in
# the same groups (a group is kernel, workload, pass, metric and GPU: not the file). Values in ms.
GEGLU = {"kernel": "geglu", "pass_": "forward", "gpu": "B200", "fixed": {"hidden": 4096}, "observed": "2026-06-16"}
TWO_FILES = {
    # seq: {(provider, backend): ms}
    1024: {("torch", "triton"): 10, ("liger", "triton"): 5, ("torch", "cutile"): 12, ("liger", "cutile"): 2},
    # The cuTile file has no torch here: its liger is compared with the Triton file's torch.
    2048: {("torch", "triton"): 20, ("liger", "triton"): 10, ("liger", "cutile"): 4},
    # Neither the row's backend nor triton has a torch: the first backend by name (cutedsl) is the baseline.
    4096: {("torch", "cutile"): 40, ("torch", "cutedsl"): 44, ("liger", "cutedsl"): 11, ("liger", "triton"): 22},
}


def two_file_runs() -> list[dict]:
    """The runs of TWO_FILES, each tagged with the backend (and file) it comes from."""
    return [
        run(provider, ms * 1_000_000, x=("seq", seq), backend=backend, **GEGLU)
        for seq, values in TWO_FILES.items()
        for (provider, backend), ms in values.items()
    ]


@pytest.fixture
def two_file_warehouse(tmp_path: Path) -> Path:
    write_warehouse(tmp_path, [*fixture_runs(), *two_file_runs()])
    database_build.build_database(tmp_path, BASELINES)
    return tmp_path
