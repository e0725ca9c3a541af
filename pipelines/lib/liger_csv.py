"""Rebuild an upstream snapshot as a Liger CSV from the normalized tables.

The file is built from `runs`, `measurements`, `run_snapshots` and
`quarantine`, not from a stored copy of the file: it proves that
normalization lost nothing. What each field is made from:

- the header is the snapshot's own (`snapshots.header`), in its order;
  columns beyond the known fifteen come from `runs.extra_columns`;
- each accepted row is its run (found by `run_snapshots.row_number`), with
  the text fields as upstream wrote them;
- `y_value_50/20/80` are numbers from the warehouse: the measurement's
  `raw_value` (passed runs), else the run's `raw_p*` (a failed run's p20 or
  p80), written as Python writes a float (the shortest text that reads back
  as the same double, which is how upstream's csv writer wrote them). A
  missing value (`nan`, empty) is written as the run's verbatim text;
- a quarantined row is put back at its row number as its `raw` text, so the
  rebuilt file has every row of the original.

The file is written like upstream writes it (Python's csv writer, excel
dialect: minimal quoting, `\\r\\n` line endings). What cannot be rebuilt is
what the tables do not hold: a byte-order mark, a missing final newline, and
a number written in another form than Python's (`1.50` comes back as `1.5`,
equal as a float).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import polars as pl

from pipelines.lib import store
from pipelines.lib.schemas import LIGER_COLUMNS

LATEST = "latest"
EXPORT_DIR = "liger_csv"
LINE_END = "\r\n"
STATISTICS = {"y_value_50": "p50", "y_value_20": "p20", "y_value_80": "p80"}
# Upstream's column -> the runs column holding its text as written.
TEXT_FIELDS = {
    "kernel_name": "kernel",
    "kernel_provider": "provider",
    "kernel_operation_mode": "pass",
    "metric_name": "metric",
    "metric_unit": "raw_unit",
    "x_name": "x_name",
    "x_label": "x_label",
    "x_value": "x_value",
    "extra_benchmark_config_str": "raw_config",
    "gpu_name": "gpu_name",
    "timestamp": "raw_timestamp",
    "liger_version": "liger_version",
}


class ExportError(ValueError):
    """The snapshot cannot be rebuilt; the message says why."""


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: str
    source_file: str
    header: tuple[str, ...]
    row_count: int

    @property
    def file_name(self) -> str:
        return PurePosixPath(self.source_file).name


def _table(warehouse: Path, name: str) -> pl.LazyFrame:
    path = warehouse / f"{name}.parquet"
    if not path.exists():
        raise ExportError(f"no {name} table in {warehouse}: materialize the warehouse first")
    return pl.scan_parquet(path)


def _snapshot(row: dict) -> Snapshot:
    return Snapshot(row["snapshot_id"], row["source_file"], tuple(json.loads(row["header"] or "[]")), row["row_count"])


def latest_snapshots(warehouse: Path) -> list[Snapshot]:
    """The newest snapshot of every file still at the source's head."""
    rows = _table(warehouse, "snapshots").filter(pl.col("is_latest")).sort("source_file").collect()
    return [_snapshot(r) for r in rows.iter_rows(named=True)]


def resolve_snapshot(warehouse: Path, snapshot: str, file: str | None = None) -> Snapshot:
    """A snapshot by id, or `latest` with the file's name (or path) when several files are at head."""
    if snapshot != LATEST:
        rows = _table(warehouse, "snapshots").filter(pl.col("snapshot_id") == snapshot).collect()
        if rows.is_empty():
            raise ExportError(f"no snapshot {snapshot!r} in {warehouse}")
        return _snapshot(rows.row(0, named=True))
    latest = latest_snapshots(warehouse)
    matching = [s for s in latest if file is None or file in (s.source_file, s.file_name)]
    if len(matching) == 1:
        return matching[0]
    names = ", ".join(s.file_name for s in latest) or "none"
    if not matching:
        raise ExportError(f"no latest snapshot of {file!r}; the files at head are: {names}")
    raise ExportError(f"several files are at head ({names}): name one with --file")


def _accepted_rows(warehouse: Path, snapshot_id: str) -> pl.DataFrame:
    placed = _table(warehouse, "run_snapshots").filter(pl.col("snapshot_id") == snapshot_id).select("run_id", "row_number")
    runs = _table(warehouse, "runs").select(
        "run_id", *TEXT_FIELDS.values(), "extra_columns",
        *[f"raw_{column}" for column in STATISTICS], *[f"raw_{stat}" for stat in STATISTICS.values()],
    )  # fmt: skip
    measured = (
        _table(warehouse, "measurements")
        .join(placed.select("run_id"), on="run_id", how="semi")
        .collect()
        .pivot("statistic", index="run_id", values="raw_value")
    )
    measured = measured.rename({s: f"measured_{s}" for s in STATISTICS.values() if s in measured.columns})
    frame = placed.join(runs, on="run_id", how="left").collect().join(measured, on="run_id", how="left")
    missing = frame.filter(pl.col("kernel").is_null())["run_id"].to_list()
    if missing:
        raise ExportError(f"snapshot {snapshot_id} places runs that are not in the runs table: {missing[:5]}")
    return frame


def _y_field(row: dict, column: str) -> float | str:
    stat = STATISTICS[column]
    number = row.get(f"measured_{stat}")
    if number is None:
        number = row[f"raw_{stat}"]
    return number if number is not None else row[f"raw_{column}"]


def _fields(row: dict, header: tuple[str, ...]) -> list[float | str | None]:
    extra = json.loads(row["extra_columns"]) if row["extra_columns"] else {}
    fields: list[float | str | None] = []
    for column in header:
        if column in STATISTICS:
            fields.append(_y_field(row, column))
        elif column in TEXT_FIELDS:
            fields.append(row[TEXT_FIELDS[column]])
        else:
            fields.append(extra.get(column))
    return fields


def rebuild(warehouse: Path, snapshot: Snapshot) -> bytes:
    """The snapshot's file, rebuilt from the tables: same header, same rows in the same order."""
    if not snapshot.header:
        raise ExportError(f"snapshot {snapshot.snapshot_id} has no header: it was not a CSV and cannot be rebuilt")
    lines: dict[int, str] = {}
    placed = 0
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="")
    for row in _accepted_rows(warehouse, snapshot.snapshot_id).iter_rows(named=True):
        writer.writerow(_fields(row, snapshot.header))
        lines[row["row_number"]] = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        placed += 1
    quarantined = _table(warehouse, "quarantine").filter(pl.col("snapshot_id") == snapshot.snapshot_id).collect()
    for row_number, raw in quarantined.select("row_number", "raw").iter_rows():
        lines[row_number] = raw
        placed += 1
    expected = list(range(1, snapshot.row_count + 1))
    if placed != snapshot.row_count or sorted(lines) != expected:
        raise ExportError(
            f"snapshot {snapshot.snapshot_id} has {snapshot.row_count} rows but the tables place "
            f"{placed} (rows 1..{snapshot.row_count} must each appear once)"
        )
    writer.writerow(snapshot.header)
    out = [buffer.getvalue(), *(lines[n] for n in expected)]
    return "".join(line + LINE_END for line in out).encode("utf-8")


def write_latest(warehouse: Path, out_dir: Path) -> dict[str, int]:
    """Rebuild the newest snapshot of every file at head into `out_dir/<file name>`, each
    atomically; CSVs there of files no longer at head are removed. Returns rows per file."""
    written: dict[str, int] = {}
    for snapshot in latest_snapshots(warehouse):
        if snapshot.file_name in written:
            raise ExportError(f"two files at head are named {snapshot.file_name}: their exports would collide")
        if not snapshot.header:
            continue
        store.write_bytes_atomic(out_dir / snapshot.file_name, rebuild(warehouse, snapshot))
        written[snapshot.file_name] = snapshot.row_count
    for stale in out_dir.glob("*.csv"):
        if stale.name not in written:
            stale.unlink()
    return written
