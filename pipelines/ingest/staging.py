"""Stage snapshots: parse and normalize each snapshot once, into its staging folder (`core.layout` names it).

A staged snapshot is a folder renamed into place only when complete, so a
killed run leaves no half-staged snapshot; the next run stages it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from pipelines import stages
from pipelines.core import allocator
from pipelines.core import layout as warehouse_layout
from pipelines.core.background import ahead
from pipelines.core.schemas import LIGER_COLUMNS, RUN_ROWS
from pipelines.ingest.normalize.distinct_cache import DistinctCache
from pipelines.ingest.normalize.rejected import rejected_rows, write_refused_parts
from pipelines.ingest.normalize.snapshot_rows import normalize
from pipelines.ingest.parse.fast import FastPathRefused
from pipelines.ingest.parse.header import Header, NotLigerCsv, read_header
from pipelines.ingest.parse.record_layout import RecordLayout
from pipelines.ingest.parse.records import iter_records
from pipelines.ingest.source.listing import SnapshotRef
from pipelines.storage import store

# The normalizer's version: raw_snapshots' code version in the stage registry (pipelines/stages.py), a digest of the
# code that stages a snapshot (this module and all it imports), never a number bumped by hand. A snapshot staged by other code is staged again (see `scan_staging`), and it is
# raw_snapshots' code version in Dagster, which shows every partition stale when it changes.
NORMALIZER_VERSION = stages.code_version("raw_snapshots")
# Columns of run rows whose values are nearly all distinct (see store.ParquetAppender).
RUN_ROWS_UNIQUE = (
    "run_id",
    "name",
    "group_id",
    "value",
    "p20",
    "p80",
    "raw_p20",
    "raw_p50",
    "raw_p80",
    "raw_y_value_50",
    "raw_y_value_20",
    "raw_y_value_80",
    "row_number",
)


@dataclass(frozen=True)
class SnapshotMeta:
    snapshot_id: str
    source: str
    source_file: str
    commit: str | None
    committed_at: str | None
    subject: str | None
    sequence: int
    ingest_seq: int
    content_sha256: str
    status: str
    reason: str | None
    header: list[str]
    row_count: int
    accepted: int
    quarantined: int
    normalizer_version: str
    # Schema drift the ingest went on through (added, reordered or missing optional columns).
    warnings: list[str] = field(default_factory=list)
    # What the file holds beyond its records' fields (parse.RecordLayout), so that it rebuilds byte for byte.
    bom: bool = False
    line_end: str = "\r\n"
    final_newline: bool = True
    layout: dict = field(default_factory=dict)
    # Which stream listed it and what its CI folder names (SPEC section 7); metas staged before streams are `data`.
    stream: str = "data"
    benchmarked_commit: str | None = None
    release: str | None = None


PART_PREFIXES = (("rows", "accepted"), ("quarantine", "quarantined"))


@dataclass(frozen=True)
class DamagedSnapshot:
    """A staged folder that is not what staging wrote: `problem` names its file. `meta` is its metadata
    when that still reads (to keep its place in the history when it is staged again)."""

    folder: Path
    problem: str
    meta: SnapshotMeta | None


def scan_staging(warehouse: Path) -> tuple[list[SnapshotMeta], list[DamagedSnapshot]]:
    """(every completely staged snapshot of the current normalizer version, every damaged staged folder).

    A folder counts as staged only if its meta.json reads as a SnapshotMeta of its own key and its
    parts' footers read and hold the rows meta.json counts: staging renames a folder into place whole,
    so anything else is damage. Footers only: a run reads no part's data to decide."""
    metas: list[SnapshotMeta] = []
    damaged: list[DamagedSnapshot] = []
    root = warehouse_layout.Layout(warehouse).staging
    if not root.is_dir():
        return metas, damaged
    for folder in sorted(root.iterdir()):
        if folder.name.startswith(".") or not folder.is_dir():
            continue  # a temporary folder of a staging in progress, or swept by store.sweep
        try:
            meta = _read_meta(folder)
        except _Damage as damage:
            damaged.append(DamagedSnapshot(folder, str(damage), None))
            continue
        if meta is None:
            continue  # another normalizer version's: staged again like any unstaged snapshot
        problem = _parts_problem(folder, meta)
        if problem:
            damaged.append(DamagedSnapshot(folder, problem, meta))
        else:
            metas.append(meta)
    return metas, damaged


def content_version(meta: SnapshotMeta) -> str:
    """What a staged snapshot holds, as one string: the sha256 of the file it was staged from and the normalizer that
    staged it. raw_snapshots' data version per partition, so that Dagster's lineage shows which snapshot changed (a
    snapshot rewritten under its id gets a new one) and which normalizer staged it."""
    return f"sha256:{meta.content_sha256}.normalizer:{meta.normalizer_version}"


def staged_metas(warehouse: Path) -> list[SnapshotMeta]:
    """Every completely staged snapshot of the current normalizer version (damaged ones are not)."""
    return scan_staging(warehouse)[0]


class _Damage(Exception):
    pass


def _read_meta(folder: Path) -> SnapshotMeta | None:
    """The folder's SnapshotMeta; None when another normalizer version wrote it; _Damage when it does not read."""
    path = folder / warehouse_layout.META
    if not path.is_file():
        raise _Damage(f"{path} is missing")
    raw = store.read_json(path)
    if not isinstance(raw, dict):
        raise _Damage(f"{path} is not a JSON object (truncated or overwritten)")
    if raw.get("normalizer_version") != NORMALIZER_VERSION:
        return None
    try:
        meta = SnapshotMeta(**raw)
    except TypeError:
        raise _Damage(f"{path} lacks fields of a snapshot's metadata or has others") from None
    counts = (meta.sequence, meta.ingest_seq, meta.row_count, meta.accepted, meta.quarantined)
    if not isinstance(meta.snapshot_id, str) or not all(isinstance(n, int) for n in counts):
        raise _Damage(f"{path} holds fields of the wrong type")
    if warehouse_layout.snapshot_key(meta.snapshot_id) != folder.name:
        raise _Damage(f"{path} is another snapshot's metadata ({meta.snapshot_id})")
    return meta


def _parts_problem(folder: Path, meta: SnapshotMeta) -> str | None:
    """What is wrong with a staged folder's parts, from their footers; None when nothing is."""
    for prefix, counted in PART_PREFIXES:
        total = 0
        for part in warehouse_layout.parts(folder, prefix):
            rows = store.parquet_rows(part)
            if rows is None:
                return f"{part} is not readable Parquet (truncated or overwritten)"
            total += rows
        if total != getattr(meta, counted):
            return f"the {prefix} parts in {folder} hold {total} rows where {warehouse_layout.META} counts {getattr(meta, counted)}"
    return None


def discard_part(part: Path) -> None:
    """Delete a staged part whose footer reads but whose data does not: its snapshot's folder then holds fewer
    rows than its meta.json counts, which the next run's `scan_staging` finds and stages again."""
    part.unlink(missing_ok=True)


def _content_sha256(data: bytes | Path) -> str:
    if isinstance(data, bytes):
        return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    with open(data, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_parts(
    data: bytes | Path,
    header: Header,
    ref: SnapshotRef,
    folder: Path,
    cache: DistinctCache,
    careful: bool,
    rejected: str | None,
    layout: RecordLayout,
) -> tuple[int, int, int]:
    """Normalize every chunk into folder/rows-N.parquet and quarantine-N.parquet; (rows, accepted, quarantined).

    Reading, normalizing and writing run at the same time, each a chunk ahead of the next step."""

    def split(records: pl.DataFrame) -> tuple[int, pl.DataFrame, pl.DataFrame]:
        if rejected:
            return records.height, pl.DataFrame(schema=RUN_ROWS), rejected_rows(records, header, ref.snapshot_id, rejected)
        normalized = normalize(records, header, snapshot_id=ref.snapshot_id, cache=cache)
        return records.height, normalized.rows, normalized.quarantine

    row_count = accepted = quarantined = 0
    cache.workloads.used.clear()
    chunks = ahead(split(records) for records in ahead(iter_records(data, header, careful=careful, layout=layout)))
    for index, (height, out_rows, out_quarantine) in enumerate(chunks):
        # Staged parts are read back whole by the assembly: no statistics, and lz4, which writes and reads
        # them in about 60% of zstd's time for half as much again on disk.
        with store.ParquetAppender(
            folder / warehouse_layout.part_file("rows", index), RUN_ROWS, RUN_ROWS_UNIQUE, "lz4", statistics=False
        ) as part:
            part.write(out_rows)
        store.write_parquet(out_quarantine, folder / warehouse_layout.part_file("quarantine", index), compression_level=1, statistics=False)
        row_count += height
        accepted += out_rows.height
        quarantined += out_quarantine.height
        allocator.give_back_freed()
    store.write_parquet(cache.workloads.used_answers(), folder / warehouse_layout.WORKLOADS, compression_level=1, statistics=False)
    return row_count, accepted, quarantined


def drift_warnings(header: Header) -> list[str]:
    """What changed in the header that upstream's writer would not have written, and that the ingest survives."""
    warnings = []
    added = [c for c in header.columns if c not in LIGER_COLUMNS]
    if added:
        warnings.append(f"upstream added column(s) {', '.join(added)}: their values are kept in runs.extra_columns")
    known = [c for c in header.columns if c in LIGER_COLUMNS]
    if known != [c for c in LIGER_COLUMNS if c in known]:
        warnings.append("the columns are in another order than upstream's: they are read by name")
    absent = [c for c in LIGER_COLUMNS if c not in header.columns and c not in header.missing]
    if absent:
        warnings.append(f"optional column(s) {', '.join(absent)} are missing: null in this snapshot's runs")
    return warnings


def stage_snapshot(
    warehouse: Path, ref: SnapshotRef, read: Callable[[SnapshotRef], bytes | Path], cache: DistinctCache, ingest_seq: int
) -> SnapshotMeta:
    """Parse and normalize one snapshot into its staging folder (replacing an older version's)."""
    paths = warehouse_layout.Layout(warehouse)
    root, final = paths.staging, paths.staged(ref.snapshot_id)
    tmp = store.temp_path(final)
    tmp.mkdir(parents=True)
    try:
        data = read(ref)
        sha = ref.content_sha256 or _content_sha256(data)
        status, reason, header = "ingested", None, None
        try:
            header = read_header(data)
        except NotLigerCsv as exc:
            status, reason = "rejected", f"not a Liger benchmark CSV: {exc}"
        if header is not None and header.missing:
            status = "rejected"
            reason = f"snapshot rejected: the header lacks required column(s) {', '.join(header.missing)}"
        layout = RecordLayout()
        if header is None:
            counts = write_refused_parts(data, ref.snapshot_id, tmp, reason or "", layout)
        else:
            try:
                counts = _write_parts(data, header, ref, tmp, cache, careful=False, rejected=reason, layout=layout)
            except FastPathRefused:
                for part in tmp.iterdir():
                    part.unlink()
                layout = RecordLayout()
                counts = _write_parts(data, header, ref, tmp, cache, careful=True, rejected=reason, layout=layout)
        meta = SnapshotMeta(
            snapshot_id=ref.snapshot_id,
            source=ref.source,
            source_file=ref.source_file,
            commit=ref.commit,
            committed_at=ref.committed_at.isoformat() if isinstance(ref.committed_at, datetime) else None,
            subject=ref.subject,
            sequence=ref.sequence,
            ingest_seq=ingest_seq,
            content_sha256=sha,
            status=status,
            reason=reason,
            header=list(header.columns) if header else [],
            row_count=counts[0],
            accepted=counts[1],
            quarantined=counts[2],
            normalizer_version=NORMALIZER_VERSION,
            warnings=drift_warnings(header) if header and status == "ingested" else [],
            bom=layout.bom,
            line_end=layout.line_end,
            final_newline=layout.final_newline,
            layout=layout.as_json(),
            stream=ref.stream,
            benchmarked_commit=ref.benchmarked_commit,
            release=ref.release,
        )
        (tmp / warehouse_layout.META).write_text(json.dumps(asdict(meta), indent=2))
        store.fsync_dir(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        store.fsync_dir(root)
        return meta
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
