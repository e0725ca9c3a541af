"""Bencher Metric Format (BMF) export: one JSON file per GPU (a Bencher testbed), named by `file_names`.

Each file maps a benchmark name to its measures, in the shape Bencher's
`json` adapter reads (`bencher run --adapter json --file <gpu>.json
--testbed <gpu>`):

    {"<benchmark>/<provider>/<workload slug>":
        {"latency": {"value": median, "lower_value": p20, "upper_value": p80}}}

- which runs: the passed runs still in their file's newest snapshot
  (`in_latest`), i.e. what upstream publishes today. When two of them share a
  name (one workload reached by two sweeps), the latest one wins (greatest
  `observed_at`, ties: greatest `run_id`), as in the comparable-group
  statistics;
- the benchmark name is the run's `benchmark` (`kernel/pass`, or
  `kernel/pass/metric` beyond speed), provider and workload slug, so it is
  unique within one GPU's file;
- the measure is the measurement's canonical metric: `latency` in ns (Bencher's
  built-in Latency measure is in ns too) or `peak_memory` in bytes (an unknown
  metric keeps its raw name and unit); `value` is the median, `lower_value` and
  `upper_value` the p20 and p80, left out when upstream did not record them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.core import display
from pipelines.core.layout import Layout
from pipelines.storage import store

BOUNDS = {"p50": "value", "p20": "lower_value", "p80": "upper_value"}


def benchmark_key() -> pl.Expr:
    return pl.format("{}/{}/{}", "benchmark", "provider", "workload_slug")


def selected_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """One run per (GPU, benchmark name): the latest passed run among those in the newest snapshots."""
    return (
        runs.filter(pl.col("in_latest") & (pl.col("status") == "passed"))
        .with_columns(benchmark_key().alias("bmf_name"))
        .sort("observed_at", "run_id")
        .group_by("gpu_name", "bmf_name", maintain_order=True)
        .last()
        .select("run_id", "gpu_name", "bmf_name")
    )


def documents(runs: pl.DataFrame, measurements: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """GPU name -> BMF document. Passed runs always have their median, so every measure has `value`."""
    chosen = selected_runs(runs)
    measured = measurements.join(chosen, on="run_id", how="inner").filter(
        pl.col("statistic").is_in(list(BOUNDS)) & pl.col("value").is_not_null()
    )
    result: dict[str, dict[str, Any]] = {gpu: {} for gpu in sorted(chosen["gpu_name"].unique().to_list())}
    for row in measured.iter_rows(named=True):
        measures = result[row["gpu_name"]].setdefault(row["bmf_name"], {})
        measures.setdefault(row["metric"], {})[BOUNDS[row["statistic"]]] = float(row["value"])
    return result


def file_names(gpu_names: list[str]) -> dict[str, str]:
    """GPU name -> its file: `<slug>.json`, or `<slug>-<hash>.json` when the slug is shared with
    another GPU of the export ("NVIDIA B200", "NVIDIA-B200") or is longer than 64 characters
    (see `display.file_names`); distinct GPUs always get distinct files."""
    return {gpu: f"{name}.json" for gpu, name in display.file_names(gpu_names).items()}


def write_bmf(warehouse: Path, out_dir: Path, write: Callable[[Path, bytes], None] = store.write_bytes_atomic) -> dict[str, int]:
    """Write one BMF file per GPU into `out_dir`, each atomically by `write`; files of GPUs no longer
    present are removed. Returns benchmarks per file."""
    runs = pl.read_parquet(Layout(warehouse).table("runs"))
    measurements = pl.read_parquet(Layout(warehouse).table("measurements"))
    by_gpu = documents(runs, measurements)
    names = file_names(list(by_gpu))
    for gpu, document in by_gpu.items():
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
        write(out_dir / names[gpu], text.encode("utf-8"))
    for stale in out_dir.glob("*.json"):
        if stale.name not in names.values():
            stale.unlink()
    return {names[gpu]: len(document) for gpu, document in by_gpu.items()}
