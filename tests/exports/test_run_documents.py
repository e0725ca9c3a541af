"""The run documents of runs.ndjson, made column-wise: each run's fields, measurements and branches in the seed's shape."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl

from pipelines.exports import ndjson

DIGESTS = {column: column[0] * 64 for column in ("protocol_digest", "workload_digest", "environment_digest", "implementation_digest")}


def run(run_id: str, metric: str, status: str, value: float | None, unit: str, raw_unit: str, raw: tuple, **fields) -> dict:
    return {
        "run_id": run_id,
        "name": f"name-{run_id}",
        "title": fields.get("title", f"title {run_id}"),
        "benchmark": f"bench/{run_id}",
        "metric": metric,
        "status": status,
        "observed_at": fields.get("observed_at", datetime(2025, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)),
        "liger_version": "0.5.10",
        "value": value,
        "unit": unit,
        "raw_unit": raw_unit,
        "raw_p20": raw[0],
        "raw_p50": raw[1],
        "raw_p80": raw[2],
        **DIGESTS,
    }


def expected(run_id: str, spec: dict, title: str | None = None) -> dict:
    prefixed = {
        "protocolDigest": "sha256:" + "p" * 64,
        "workloadDigest": "sha256:" + "w" * 64,
        "environmentDigest": "sha256:" + "e" * 64,
        "implementationDigest": "sha256:" + "i" * 64,
    }
    return {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": "BenchmarkRun",
        "metadata": {"labels": {"liger_version": "0.5.10"}, "name": f"name-{run_id}", "title": title or f"title {run_id}"},
        "spec": {**spec, **prefixed, "sourceNative": {**spec["sourceNative"], "benchmark": f"bench/{run_id}", "externalId": run_id}},
    }


def native(prefix: str, raw: tuple) -> dict:
    return {"source": "liger-kernel-bench", "metrics": {f"{prefix}_{q}": value for q, value in zip(("20", "50", "80"), raw)}}


def test_each_run_gets_its_own_measurements_by_statistic_and_its_metrics_branch():
    """Runs in another order than their measurements, a failed run without any, an unknown metric (its unit and a
    native prefix from its raw unit, values not made integers), memory in whole bytes, non-ASCII text."""
    runs = pl.DataFrame(
        [
            run("mem", "memory", "passed", 2048.0, "bytes", "MB", (1.5, 2.0, 2.5)),
            run(
                "failed",
                "speed",
                "failed",
                None,
                "ns",
                "ms",
                (None, float("nan"), None),
                observed_at=datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
            ),
            run("odd", "throughput", "passed", 12.75, "tok/s", "Tok/S", (1.25, 12.75, 3e-7), title="Débit · ünïcode"),
        ]
    )
    measurements = pl.DataFrame(
        {
            "run_id": ["odd", "mem", "odd", "mem", "odd", "mem", "gone"],
            "metric": ["throughput", "peak_memory", "throughput", "peak_memory", "throughput", "peak_memory", "latency"],
            "statistic": ["p80", "p80", "p50", "p20", "p20", "p50", "p20"],
            "value": [3e-7, 2621440.9, 12.75, 1572864.0, 1.25, 2048.0, 1.0],
            "unit": ["tok/s", "bytes", "tok/s", "bytes", "tok/s", "bytes", "ns"],
        }
    )
    got = list(ndjson.run_documents(runs, measurements))
    want = [
        expected(
            "mem",
            {
                "status": "passed",
                "memory": {"peakBytes": {"median": 2048}, "primaryStatistic": "median"},
                "observedAt": "2025-01-02T03:04:05.678Z",
                "measurements": [
                    {"unit": "bytes", "value": 1572864, "metric": "peak_memory", "statistic": "p20"},
                    {"unit": "bytes", "value": 2621440, "metric": "peak_memory", "statistic": "p80"},
                ],
                "sourceNative": native("mb", (1.5, 2.0, 2.5)),
            },
        ),
        expected(
            "failed",
            {
                "status": "failed",
                "observedAt": "1999-12-31T23:59:59.000Z",
                "measurements": [],
                "sourceNative": native("ms", (None, float("nan"), None)),
            },
        ),
        expected(
            "odd",
            {
                "status": "passed",
                "throughput": {"value": {"median": 12.75}, "primaryStatistic": "median", "unit": "tok/s"},
                "observedAt": "2025-01-02T03:04:05.678Z",
                "measurements": [
                    {"unit": "tok/s", "value": 1.25, "metric": "throughput", "statistic": "p20"},
                    {"unit": "tok/s", "value": 3e-7, "metric": "throughput", "statistic": "p80"},
                ],
                "sourceNative": native("tok_s", (1.25, 12.75, 3e-7)),
            },
            title="Débit · ünïcode",
        ),
    ]
    assert [json.dumps(doc, sort_keys=True) for doc in got] == [json.dumps(doc, sort_keys=True) for doc in want]
    assert [type(m["value"]) for m in got[0]["spec"]["measurements"]] == [int, int]
