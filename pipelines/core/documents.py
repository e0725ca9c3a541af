"""Resource documents (SPEC section 3): run, protocol and environment specs in the seed's shape."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from itertools import islice
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


# The runs columns a run's document is made of.
RUN_COLUMNS = (
    "run_id",
    "name",
    "title",
    "benchmark",
    "metric",
    "status",
    "liger_version",
    "value",
    "unit",
    "raw_unit",
    "raw_p20",
    "raw_p50",
    "raw_p80",
    "protocol_digest",
    "workload_digest",
    "environment_digest",
    "implementation_digest",
)
# The spec's digest keys, of RUN_COLUMNS' last four columns in their order.
DIGEST_KEYS = ("protocolDigest", "workloadDigest", "environmentDigest", "implementationDigest")
# One measurement as run_documents takes it: (unit, value, metric, statistic).
Measurement = tuple[str, float | None, str, str]


def run_documents(
    runs: Mapping[str, Sequence[Any]], observed_at: Sequence[str], measured: Sequence[int], measurements: Iterable[Measurement]
) -> Iterator[dict[str, Any]]:
    """Each run in the seed's shape, from the `runs` columns RUN_COLUMNS (one list per column, a run per position), its
    `observed_at_text`, and how many of `measurements` are its own: those other than the median (p50, which is the
    run's value), each run's in a row in the runs' order and by statistic. Column-wise, since upstream's history alone
    has 90,207 runs."""
    columns = [runs[column] for column in RUN_COLUMNS]
    measurements = iter(measurements)
    for row, observed, count in zip(zip(*columns, strict=True), observed_at, measured, strict=True):
        (run_id, name, title, benchmark, metric, status, liger_version, value, unit, raw_unit, p20, p50, p80, *digests) = row
        known = METRICS.get(metric)
        integral = known is not None
        _, _, native_prefix, block, block_key = known or (metric, unit, slug(raw_unit or metric).replace("-", "_"), metric, "value")
        spec: dict[str, Any] = {"status": status}
        if status == "passed":
            spec[block] = {block_key: {"median": _number(value, integral)}, "primaryStatistic": "median"}
            if not integral:
                spec[block]["unit"] = unit
        spec["observedAt"] = observed
        spec["measurements"] = [
            {"unit": m_unit, "value": _number(m_value, integral), "metric": m_metric, "statistic": m_statistic}
            for m_unit, m_value, m_metric, m_statistic in islice(measurements, count)
        ]
        spec["sourceNative"] = {
            "source": SOURCE_NAME,
            "metrics": {f"{native_prefix}_20": p20, f"{native_prefix}_50": p50, f"{native_prefix}_80": p80},
            "benchmark": benchmark,
            "externalId": run_id,
        }
        for key, digest in zip(DIGEST_KEYS, digests, strict=True):
            spec[key] = prefixed(digest)
        yield {
            "kind": "BenchmarkRun",
            "spec": spec,
            "metadata": {"name": name, "title": title, "labels": {"liger_version": liger_version}},
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
