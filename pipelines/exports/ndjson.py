"""Resource documents for every run, protocol and environment (SPEC section 3)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.core import documents, layout
from pipelines.storage import store


def _read(warehouse: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(layout.Layout(warehouse).table(name))


def run_documents(runs: pl.DataFrame, measurements: pl.DataFrame) -> Iterator[dict[str, Any]]:
    by_run: dict[str, list[dict]] = {}
    for m in measurements.iter_rows(named=True):
        by_run.setdefault(m["run_id"], []).append(m)
    for run in runs.iter_rows(named=True):
        yield documents.run_document(run, by_run.get(run["run_id"], []))


def show_run(warehouse: Path, run_id: str) -> dict[str, Any] | None:
    """The run with its protocol and environment, in the shape of shared/examples/seed-run.json."""
    runs = pl.scan_parquet(layout.Layout(warehouse).table("runs")).filter(pl.col("run_id") == run_id).collect()
    if runs.is_empty():
        return None
    run = runs.row(0, named=True)
    measured = pl.scan_parquet(layout.Layout(warehouse).table("measurements")).filter(pl.col("run_id") == run_id).collect()
    protocol = _read(warehouse, "protocols").filter(pl.col("protocol_digest") == run["protocol_digest"]).row(0, named=True)
    environment = _read(warehouse, "environments").filter(pl.col("environment_digest") == run["environment_digest"]).row(0, named=True)
    return {
        "run": documents.run_document(run, measured.to_dicts()),
        "protocol": documents.protocol_document(protocol),
        "environment": documents.environment_document(environment),
    }


def write_ndjson(warehouse: Path, out: Path | None = None) -> dict[str, int]:
    """Write {runs,protocols,environments}.ndjson into `out` (WAREHOUSE_DIR/exports/), each atomically; returns line counts."""
    out = layout.Layout(warehouse).exports if out is None else out
    runs, measurements = _read(warehouse, "runs"), _read(warehouse, "measurements")
    documents_by_file = {
        layout.document_file("runs"): run_documents(runs, measurements),
        layout.document_file("protocols"): (documents.protocol_document(r) for r in _read(warehouse, "protocols").iter_rows(named=True)),
        layout.document_file("environments"): (
            documents.environment_document(r) for r in _read(warehouse, "environments").iter_rows(named=True)
        ),
    }
    counts = {}
    for name, docs in documents_by_file.items():
        lines = [json.dumps(doc, ensure_ascii=False, sort_keys=True) for doc in docs]
        store.write_bytes_atomic(out / name, ("\n".join(lines) + "\n" if lines else "").encode())
        counts[name] = len(lines)
    return counts
