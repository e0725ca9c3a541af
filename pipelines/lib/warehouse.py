"""The ingest steps end to end, without Dagster: sync the source, stage new snapshots, assemble tables."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from pipelines.lib import ingest, store, tables
from pipelines.lib.normalize import DistinctCache
from pipelines.lib.source import (
    Listing,
    SnapshotRef,
    Source,
    SourceError,
    normalized_source,
    open_source,
)

LISTING = "_source.json"
TABLE_NAMES = ("runs", "measurements", "environments", "protocols", "snapshots", "run_snapshots", "quarantine")


@dataclass(frozen=True)
class SourceSettings:
    source: str
    branch: str
    file_glob: str
    cache_dir: Path

    def open(self) -> Source:
        return open_source(self.source, self.cache_dir, self.branch, self.file_glob)


@dataclass
class StageReport:
    listed: int
    staged: list[str] = field(default_factory=list)
    already: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class TablesReport:
    rewritten: bool
    row_counts: dict[str, int]


def sync(warehouse: Path, settings: SourceSettings) -> Listing:
    """Clone or fetch the source and record what it holds now in `_source.json`."""
    check_same_source(warehouse, settings)
    source = settings.open()
    source.sync()
    listing = source.listing()
    store.write_json_atomic(
        warehouse / LISTING,
        {
            "source": settings.source,
            "source_key": normalized_source(settings.source),
            "branch": settings.branch,
            "head": listing.head,
            "files_at_head": list(listing.files_at_head),
            "snapshots": [asdict(ref) | {"committed_at": _iso(ref.committed_at)} for ref in listing.snapshots],
        },
    )
    return listing


def check_same_source(warehouse: Path, settings: SourceSettings) -> None:
    """Refuse to ingest a second source into a warehouse that holds one already: the two histories
    would be merged silently (its tables, `in_latest` and exports would mix both). The same source
    spelled differently (a relative and an absolute path, a file URL) is the same source."""
    recorded = _recorded_source(warehouse)
    if recorded is None:
        return
    shown, key = recorded
    if key != normalized_source(settings.source):
        raise SourceError(
            f"the warehouse {warehouse} holds the source {shown!r}, not LIGER_SOURCE {settings.source!r}: one warehouse holds one "
            f"source; set WAREHOUSE_DIR to another folder for the new source, or delete {warehouse} to rebuild it from the new one"
        )


def _recorded_source(warehouse: Path) -> tuple[str, str] | None:
    """(as given, normalized) of the source recorded in the listing, else of a staged snapshot; None for a new warehouse."""
    try:
        raw = json.loads((warehouse / LISTING).read_text())
        return raw["source"], raw.get("source_key") or normalized_source(raw["source"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no listing yet (or a damaged one): the staged snapshots say which source they came from
    for meta in ingest.staged_metas(warehouse):
        return meta.source, normalized_source(meta.source)
    return None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def recorded_listing(warehouse: Path) -> Listing | None:
    path = warehouse / LISTING
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    refs = tuple(
        SnapshotRef(**(r | {"committed_at": datetime.fromisoformat(r["committed_at"]) if r["committed_at"] else None}))
        for r in raw["snapshots"]
    )
    return Listing(head=raw["head"], snapshots=refs, files_at_head=tuple(raw["files_at_head"]))


def stage_new(warehouse: Path, settings: SourceSettings, listing: Listing, progress=None) -> StageReport:
    """Parse and normalize every listed snapshot not staged yet; the others are not read at all."""
    report = StageReport(listed=len(listing.snapshots))
    # A run killed mid-staging leaves its half-written snapshot folder behind: sweep it.
    store.recover(ingest.staging_dir(warehouse))
    pending = [ref for ref in listing.snapshots if not ingest.is_staged(warehouse, ref.snapshot_id)]
    report.already = report.listed - len(pending)
    if not pending:
        return report
    source = settings.open()
    cache = DistinctCache()
    ingest_seq = ingest.next_ingest_seq(warehouse)
    for index, ref in enumerate(pending, 1):
        meta = ingest.stage_snapshot(warehouse, ref, source.read, cache, ingest_seq)
        report.staged.append(meta.snapshot_id)
        report.warnings += [f"{meta.snapshot_id}: {warning}" for warning in meta.warnings]
        if progress:
            progress(f"staged {index}/{len(pending)} {meta.snapshot_id}: {meta.accepted} accepted, {meta.quarantined} quarantined")
    return report


def build_tables(warehouse: Path, files_at_head: list[str] | None) -> TablesReport:
    """Assemble and commit all tables together, unless nothing they depend on changed."""
    metas = ingest.staged_metas(warehouse)
    print_ = tables.fingerprint(metas, files_at_head)
    state_path = warehouse / tables.STATE
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    present = all((warehouse / f"{name}.parquet").exists() for name in TABLE_NAMES)
    if present and state.get("fingerprint") == print_:
        return TablesReport(rewritten=False, row_counts=state.get("row_counts", {}))
    # The tables are written straight into a scratch folder of the warehouse (swept by store.recover if
    # the run dies), then renamed into place together.
    scratch = store.temp_path(warehouse / "_tables")
    scratch.mkdir(parents=True)
    try:
        files = tables.write_tables(warehouse, files_at_head, scratch)
        store.commit_files(warehouse, {f"{name}.parquet": file.path for name, file in files.items()})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    counts = {name: file.rows for name, file in files.items()}
    store.write_json_atomic(state_path, {"fingerprint": print_, "row_counts": counts})
    return TablesReport(rewritten=True, row_counts=counts)
