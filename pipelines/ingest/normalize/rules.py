"""The SPEC section 2 rules: timestamps, missing y values, unit conversions, and the answers per distinct
config, GPU, benchmark and implementation that DistinctCache keeps."""

from __future__ import annotations

from pipelines.core import catalog, documents
from pipelines.core.canonical import benchmark_name, canonical_json, digest, digest_of_canonical
from pipelines.core.workload import ConfigError, build_workload, canonical_key

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"
MISSING_Y = ("", "nan", "-nan", "+nan")
Y_COLUMNS = {"50": "y_value_50", "20": "y_value_20", "80": "y_value_80"}

# The metrics whose y values are measurements (a latency, a peak memory): a number not above zero is none.
MEASURED_METRICS = ("speed", "memory")
# (metric, unit as upstream writes it) -> (canonical metric, canonical unit, factor)
UNIT_CONVERSIONS = {
    ("speed", "ms"): ("latency", "ns", 1e6),
    ("memory", "MB"): ("peak_memory", "bytes", float(2**20)),
}

# The answers of workload_fields and benchmark_fields, in their order.
WORKLOAD_FIELDS = ("workload", "workload_slug", "workload_digest", "x_key", "sweep_workload", "sweep_digest", "_config_error")
BENCHMARK_FIELDS = ("benchmark", "kernel_title", "title", "protocol_digest", "_kernel_json")


def workload_fields(config: str, x_name: str, x_value: str, parameter: str = "") -> tuple[str | None, ...]:
    try:
        workload = build_workload(config, x_name, x_value, parameter)
    except ConfigError as exc:
        return (None,) * 6 + (str(exc),)
    x_key = canonical_key(x_name)
    sweep = {k: v for k, v in workload.params.items() if k != x_key}
    sweep_json = canonical_json(sweep)
    return (workload.canonical, workload.slug, workload.digest, x_key, sweep_json, digest_of_canonical(sweep_json), None)


def benchmark_fields(kernel: str, provider: str, pass_: str, metric: str) -> tuple[str, ...]:
    kernel_title = catalog.kernel_title(kernel)
    title = f"{kernel_title} · {provider} · {pass_}" + (" · peak memory" if metric == "memory" else "")
    kernel_json = canonical_json(kernel)
    return (benchmark_name(kernel, pass_, metric), kernel_title, title, protocol_digest(metric, pass_), kernel_json)


def environment_digest(gpu_name: str) -> str:
    return digest(documents.environment(catalog.gpu(gpu_name))["spec"])


def protocol_digest(metric: str, pass_: str) -> str:
    return digest(documents.protocol(metric, pass_)["spec"])


def implementation_digest(kernel: str, provider: str, liger_version: str | None) -> str:
    return digest({"kernel": kernel, "provider": provider, "ligerVersion": liger_version})
