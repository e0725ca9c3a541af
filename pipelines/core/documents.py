"""Resource documents (SPEC section 3): run, protocol and environment specs in the seed's shape."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pipelines.core.canonical import prefixed, slug
from pipelines.core.catalog import Gpu, gpu_short_name

API_VERSION = "kernelindex.dev/v1alpha1"
SOURCE_NAME = "liger-kernel-bench"
HARNESS = {"name": "Liger-Kernel benchmark scripts", "repository": "https://github.com/linkedin/Liger-Kernel"}
FAMILY = "liger_kernel_bench"

PASS_WHAT = {
    "full": "the forward pass plus the backward pass",
    "forward": "the forward pass",
    "backward": "the backward pass",
    "no-grad-forward": "the forward pass under torch.no_grad()",
}
CAVEAT = (
    "The upstream CSV records no CUDA, driver, or torch version; the Liger release rides each run's labels. "
    "Comparable only within one kernel, workload, timed pass, and GPU."
)

# metric as upstream writes it -> (canonical metric, canonical unit, source-native key prefix, spec block, block key)
METRICS = {
    "speed": ("latency", "ns", "ms", "timing", "latencyNs"),
    "memory": ("peak_memory", "bytes", "mb", "memory", "peakBytes"),
}


def pass_what(pass_: str) -> str:
    return PASS_WHAT.get(pass_, f"the {pass_} pass as upstream names it")


def protocol(metric: str, pass_: str) -> dict[str, Any]:
    """name, title and spec of the protocol for one (metric, pass)."""
    if metric == "speed":
        name = f"liger-bench-do-bench-{slug(pass_)}"
        title = f"Liger benchmark harness · {pass_} pass"
        measurement = {"timer": "cuda_events", "primaryStatistic": "median"}
        notes = f"Timed: {pass_what(pass_)}, via triton.testing.do_bench with quantiles 0.5/0.2/0.8 (median with p20/p80 spread). {CAVEAT}"
    elif metric == "memory":
        name = f"liger-bench-peak-memory-{slug(pass_)}"
        title = f"Liger benchmark harness · {pass_} pass · peak memory"
        measurement = {
            "reader": "torch.cuda.max_memory_allocated",
            "iterations": 10,
            "unit": "MiB (upstream labels it MB)",
            "primaryStatistic": "median",
        }
        notes = (
            f"Measured: peak memory allocated by torch while running {pass_what(pass_)}, read with "
            "torch.cuda.max_memory_allocated() / 2**20 over 10 iterations (upstream's MB are MiB), "
            f"with quantiles 0.5/0.2/0.8. {CAVEAT}"
        )
    else:
        name = f"liger-bench-{slug(metric)}-{slug(pass_)}"
        title = f"Liger benchmark harness · {pass_} pass · {metric}"
        measurement = {"metric": metric, "primaryStatistic": "median"}
        notes = f"Measured: {metric} of {pass_what(pass_)}, as upstream records it, with quantiles 0.5/0.2/0.8. {CAVEAT}"
    spec = {"harness": HARNESS, "measurement": measurement, "comparability": {"notes": notes, "family": FAMILY}}
    return {"name": name, "title": title, "spec": spec}


def environment(gpu: Gpu) -> dict[str, Any]:
    """name, title and spec of the environment of one GPU."""
    hardware = {"vendor": gpu.vendor, "product": gpu.product}
    if gpu.form_factor:
        hardware["formFactor"] = gpu.form_factor
    if gpu.architecture:
        hardware["architecture"] = gpu.architecture
    return {
        "name": f"liger-bench-{slug(gpu.gpu_name)}",
        "title": f"Liger benchmark host · {gpu_short_name(gpu.gpu_name)}",
        "spec": {"hardware": hardware, "software": {}},
    }


def _number(value: float | None, integral: bool) -> float | int | None:
    if value is None:
        return None
    return int(value) if integral else value


def observed_at_text(observed_at: datetime) -> str:
    utc = observed_at.astimezone(UTC) if observed_at.tzinfo else observed_at
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def run_document(run: dict[str, Any], measurements: list[dict[str, Any]]) -> dict[str, Any]:
    """The run in the seed's shape, from a `runs` row and its `measurements` rows."""
    metric = run["metric"]
    canonical_metric, unit, native_prefix, block, block_key = METRICS.get(
        metric, (metric, run["unit"], slug(run["raw_unit"] or metric).replace("-", "_"), metric, "value")
    )
    integral = metric in METRICS
    spec: dict[str, Any] = {"status": run["status"]}
    if run["status"] == "passed":
        spec[block] = {block_key: {"median": _number(run["value"], integral)}, "primaryStatistic": "median"}
        if metric not in METRICS:
            spec[block]["unit"] = run["unit"]
    spec["observedAt"] = observed_at_text(run["observed_at"])
    spec["measurements"] = [
        {"unit": m["unit"], "value": _number(m["value"], integral), "metric": m["metric"], "statistic": m["statistic"]}
        for m in sorted(measurements, key=lambda m: m["statistic"])
        if m["statistic"] != "p50"
    ]
    spec["sourceNative"] = {
        "source": SOURCE_NAME,
        "metrics": {f"{native_prefix}_{q}": run[f"raw_p{q}"] for q in ("20", "50", "80")},
        "benchmark": run["benchmark"],
        "externalId": run["run_id"],
    }
    for key, column in (
        ("protocolDigest", "protocol_digest"),
        ("workloadDigest", "workload_digest"),
        ("environmentDigest", "environment_digest"),
        ("implementationDigest", "implementation_digest"),
    ):
        spec[key] = prefixed(run[column])
    return {
        "kind": "BenchmarkRun",
        "spec": spec,
        "metadata": {"name": run["name"], "title": run["title"], "labels": {"liger_version": run["liger_version"]}},
        "apiVersion": API_VERSION,
    }


def _named_document(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": kind,
        "spec": json.loads(row["spec"]),
        "metadata": {"name": row["name"], "title": row["title"]},
        "apiVersion": API_VERSION,
    }


def protocol_document(row: dict[str, Any]) -> dict[str, Any]:
    """A `protocols` row as a BenchmarkProtocol resource."""
    return _named_document("BenchmarkProtocol", row)


def environment_document(row: dict[str, Any]) -> dict[str, Any]:
    """An `environments` row as an ExecutionEnvironment resource."""
    return _named_document("ExecutionEnvironment", row)
