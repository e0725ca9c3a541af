"""Resource documents for every run, protocol and environment (SPEC section 3)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.core import documents, layout
from pipelines.storage import store

# A document's line: what json.dumps(doc, ensure_ascii=False, sort_keys=True) writes, by one encoder for every line
# rather than a new one per line as json.dumps makes, and without its check for containers that hold themselves (a
# document is a tree made afresh for its line, so it has none and the bytes are the same).
_line = json.JSONEncoder(ensure_ascii=False, sort_keys=True, check_circular=False).encode


def _read(warehouse: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(layout.Layout(warehouse).table(name))


# A measurement's fields in the order documents.run_documents takes them.
MEASUREMENT_FIELDS = ("unit", "value", "metric", "statistic")


def run_documents(runs: pl.DataFrame, measurements: pl.DataFrame) -> Iterator[dict[str, Any]]:
    """The document of each run of `runs` (in its order) with its rows of `measurements`: the columns handed over
    whole, each observed_at's text made once per distinct time, the measurements put in order by polars."""
    at = runs.select("run_id").with_row_index("at")
    measured = (
        measurements.filter(pl.col("statistic").ne_missing("p50"))
        .join(at, on="run_id")
        .sort("at", "statistic", maintain_order=True)
        .select(*MEASUREMENT_FIELDS, "at")
    )
    counts = at.join(measured.group_by("at").len(), on="at", how="left", maintain_order="left")["len"].fill_null(0)
    observed = _per_distinct(runs["observed_at"], documents.observed_at_text)
    columns = {column: runs[column].to_list() for column in documents.RUN_COLUMNS}
    each = zip(*(measured[field].to_list() for field in MEASUREMENT_FIELDS), strict=True)
    yield from documents.run_documents(columns, observed, counts.to_list(), each)


def _per_distinct(column: pl.Series, make: Callable[[Any], Any]) -> list[Any]:
    """`make` of each value of `column`, called once per distinct value."""
    keys = column.to_physical()
    distinct = pl.DataFrame({"key": keys, "value": column}).unique("key")
    made = dict(zip(distinct["key"].to_list(), map(make, distinct["value"].to_list()), strict=True))
    return [made[key] for key in keys.to_list()]


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
        "run": next(run_documents(runs, measured)),
        "protocol": documents.protocol_document(protocol),
        "environment": documents.environment_document(environment),
    }


# Two 64-bit hashes of a run's row and two of its measurements' rows (in their order): the run's digest.
DIGEST_COLUMNS = ("row_0", "row_1", "measured_0", "measured_1")


@dataclass(frozen=True)
class Kept:
    """The runs file of the export before this one, its sha256 as written and each line's run digest (`run_digests`,
    in the file's order)."""

    runs: Path
    sha256: str | None
    digests: Path


def run_digests(runs: pl.DataFrame, measurements: pl.DataFrame, code: str) -> pl.DataFrame:
    """run_id and its digest (DIGEST_COLUMNS), in the runs' order: a run's document is a function of its runs row and
    its measurements rows alone, so the same digest (with `code`, the export's code version) gives the same line. The
    hashes are polars' and stable only within one polars version, which `code` names (its libraries' versions)."""
    salted = runs.with_columns(pl.lit(code).alias("__code"))
    measured = measurements.with_columns(m0=measurements.hash_rows(seed=2), m1=measurements.hash_rows(seed=3))
    measured = measured.group_by("run_id", maintain_order=True).agg("m0", "m1")
    measured = measured.select(
        "run_id", measured_0=measured.select("m0").hash_rows(seed=4), measured_1=measured.select("m1").hash_rows(seed=5)
    )
    own = pl.DataFrame({"run_id": runs["run_id"], "row_0": salted.hash_rows(seed=0), "row_1": salted.hash_rows(seed=1)})
    return own.join(measured, on="run_id", how="left", maintain_order="left").select("run_id", *DIGEST_COLUMNS)


def _kept_lines(kept: Kept | None, digests: pl.DataFrame) -> list[str | None]:
    """Per run of `digests`, its line of the kept file where its digest is the same, else None; all None when the
    kept file is not the one its build wrote."""
    nothing: list[str | None] = [None] * digests.height
    if kept is None or kept.sha256 is None:
        return nothing
    try:
        data = kept.runs.read_bytes()
        before = pl.read_parquet(kept.digests)
    except OSError:
        return nothing
    if hashlib.sha256(data).hexdigest() != kept.sha256:
        return nothing
    lines = data.decode().split("\n")[:-1]
    if len(lines) != before.height:
        return nothing
    found = digests.join(before.with_row_index("line"), on=["run_id", *DIGEST_COLUMNS], how="left", maintain_order="left")["line"]
    if len(found) != digests.height:
        return nothing
    return [None if index is None else lines[index] for index in found.to_list()]


def write_ndjson(warehouse: Path, out: Path | None = None) -> dict[str, int]:
    """Write {runs,protocols,environments}.ndjson into `out` (WAREHOUSE_DIR/exports/), each atomically; returns line counts."""
    return write_ndjson_digested(warehouse, out)[0]


def write_ndjson_digested(
    warehouse: Path, out: Path | None = None, kept: Kept | None = None, code: str = ""
) -> tuple[dict[str, int], pl.DataFrame, str]:
    """`write_ndjson`, with each run's digest (`run_digests`) and the runs file's sha256. A run whose digest is the
    kept file's takes its line from there: a new CI folder adds runs and changes none of the others."""
    out = layout.Layout(warehouse).exports if out is None else out
    runs, measurements = _read(warehouse, "runs"), _read(warehouse, "measurements")
    digests = run_digests(runs, measurements, code)
    kept_lines = _kept_lines(kept, digests)
    changed = runs.filter(pl.Series([line is None for line in kept_lines], dtype=pl.Boolean))
    made = iter(_line(doc) for doc in run_documents(changed, measurements.join(changed.select("run_id"), on="run_id", how="semi")))
    run_lines = [line if line is not None else next(made) for line in kept_lines]
    lines_by_file = {
        layout.document_file("runs"): run_lines,
        layout.document_file("protocols"): [
            _line(documents.protocol_document(r)) for r in _read(warehouse, "protocols").iter_rows(named=True)
        ],
        layout.document_file("environments"): [
            _line(documents.environment_document(r)) for r in _read(warehouse, "environments").iter_rows(named=True)
        ],
    }
    counts = {}
    runs_sha256 = ""
    for name, lines in lines_by_file.items():
        data = ("\n".join(lines) + "\n" if lines else "").encode()
        store.write_bytes_atomic(out / name, data)
        counts[name] = len(lines)
        if name == layout.document_file("runs"):
            runs_sha256 = hashlib.sha256(data).hexdigest()
    return counts, digests, runs_sha256
