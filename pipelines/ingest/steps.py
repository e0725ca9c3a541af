"""The ingest steps without Dagster: sync the source and stage its new snapshots (the tables are assembled from
them by pipelines.assemble.tables_build)."""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from pipelines.core.layout import Layout, snapshot_key
from pipelines.core.settings import Settings
from pipelines.ingest import stage_pool, staging
from pipelines.ingest.source.address import normalized_source
from pipelines.ingest.source.configured import describe, identity, source_of
from pipelines.ingest.source.listing import Listing, SnapshotRef, SourceError
from pipelines.storage import store


@dataclass
class StageReport:
    listed: int
    already: int = 0
    warnings: list[str] = field(default_factory=list)
    # Damaged staged snapshots removed to be staged again (what was wrong), and the ingest_seq they had.
    repaired: list[str] = field(default_factory=list)
    kept_seqs: dict[str, int] = field(default_factory=dict)
    metas: list[staging.SnapshotMeta] = field(default_factory=list)

    @property
    def staged(self) -> list[str]:
        """The ids of the snapshots this run staged, in the order they were staged."""
        return [meta.snapshot_id for meta in self.metas]


def sync(warehouse: Path, settings: Settings) -> Listing:
    """Clone or fetch the source and record what it holds now in `_source.json`."""
    check_same_source(warehouse, settings)
    source = source_of(settings)
    source.sync()
    listing = source.listing()
    store.write_json_atomic(
        Layout(warehouse).listing,
        {
            "source": settings.source,
            "source_key": normalized_source(settings.source),
            "identity": identity(settings),
            "described": describe(settings),
            "absent_streams": list(getattr(source, "absent", [])),
            "branch": settings.branch,
            "head": listing.head,
            "files_at_head": list(listing.files_at_head),
            "head_snapshots": list(listing.head_snapshots) if listing.head_snapshots is not None else None,
            "snapshots": [
                asdict(ref) | {"committed_at": _iso(ref.committed_at), "main_committed_at": _iso(ref.main_committed_at)}
                for ref in listing.snapshots
            ],
        },
    )
    return listing


def check_same_source(warehouse: Path, settings: Settings) -> None:
    """Refuse to ingest a second source into a warehouse that holds one already: the two histories
    would be merged silently (its tables, `in_latest` and exports would mix both). The same source
    spelled differently (a relative and an absolute path, a file URL) is the same source; another
    branch, stream or file pattern of it is another source (SPEC section 1)."""
    raw = store.read_state(Layout(warehouse).listing)
    recorded = _recorded_source(warehouse, raw)
    if recorded is None:
        return
    shown, key = recorded
    if key != normalized_source(settings.source):
        raise SourceError(
            f"the warehouse {warehouse} holds the source {shown!r}, not LIGER_SOURCE {settings.source!r}: one warehouse holds "
            f"one source; set WAREHOUSE_DIR to another folder for the new source, or delete {warehouse} to rebuild it from the new one"
        )
    # A listing written before streams were recorded names its source only: it is taken as this one's.
    if isinstance(raw.get("identity"), dict) and raw["identity"] != identity(settings):
        raise SourceError(
            f"the warehouse {warehouse} was built from {raw.get('described') or shown!r}, not from {describe(settings)}: "
            "a branch, stream or file pattern is part of the source (LIGER_BRANCH, LIGER_FILE_GLOB, LIGER_STREAMS, LIGER_CI_*); "
            f"set them back, set WAREHOUSE_DIR to another folder, or delete {warehouse} to rebuild it"
        )


def _recorded_source(warehouse: Path, raw: dict) -> tuple[str, str] | None:
    """(as given, normalized) of the source recorded in the listing `raw`, else of a staged snapshot; None for a new warehouse."""
    if isinstance(raw.get("source"), str):
        return raw["source"], raw.get("source_key") or normalized_source(raw["source"])
    # No listing yet (or a damaged one): the staged snapshots say which source they came from.
    for meta in staging.staged_metas(warehouse):
        return meta.source, normalized_source(meta.source)
    return None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _time(value: str | None) -> datetime | None:
    # A listing written before `main_committed_at` existed lacks it: None.
    return datetime.fromisoformat(value) if value else None


def recorded_listing(warehouse: Path) -> Listing | None:
    """The listing the last sync recorded; None before the first. A damaged one is DamagedFile: the
    next sync (upstream_source) writes it again."""
    path = Layout(warehouse).listing
    if not path.exists():
        return None
    raw = store.read_json(path)
    try:
        refs = tuple(
            SnapshotRef(**(r | {"committed_at": _time(r["committed_at"]), "main_committed_at": _time(r.get("main_committed_at"))}))
            for r in raw["snapshots"]
        )
        at_head = raw.get("head_snapshots")
        return Listing(
            head=raw["head"],
            snapshots=refs,
            files_at_head=tuple(raw["files_at_head"]),
            head_snapshots=tuple(at_head) if isinstance(at_head, list) else None,
        )
    except (TypeError, KeyError, ValueError):
        raise store.DamagedFile(
            f"{path} is damaged (not the listing a sync writes): materialize upstream_source (or everything) to list the source again",
            path,
        ) from None


def stage(warehouse: Path, settings: Settings, listing: Listing, snapshot_ids: list[str], workers: int = 1, progress=None) -> StageReport:
    """Parse and normalize each of `snapshot_ids` (partitions of raw_snapshots) into its staging folder,
    replacing what was staged for it; the other staged snapshots are not read. With `workers` > 1 the
    snapshots are staged in that many processes at once."""
    report = StageReport(listed=len(listing.snapshots))
    # A run killed mid-staging leaves its half-written snapshot folder behind: sweep it.
    store.sweep(Layout(warehouse).staging)
    staged, damaged = staging.scan_staging(warehouse)
    lost = _clear_damaged(damaged, listing, report)
    refs = {ref.snapshot_id: ref for ref in listing.snapshots}
    wanted = set(snapshot_ids)
    staged_ids = {m.snapshot_id for m in staged}
    unknown = [i for i in snapshot_ids if i not in refs and i not in staged_ids]
    if unknown:
        raise SourceError(
            f"snapshot {unknown[0]} is not in the source's listing and was never staged: it cannot be staged from {settings.source}"
        )
    # One asked for but no longer in the source keeps its intact staging, the only copy.
    pending = [ref for ref in listing.snapshots if ref.snapshot_id in wanted]
    kept = [m for m in staged if m.snapshot_id not in wanted]
    ingest_seq = 1 + max((m.ingest_seq for m in staged), default=0)
    # A commit's snapshots share one ingest_seq, as when they are staged in one run: one staged again
    # (after damage, or by a new normalizer) keeps its place among its commit's other files.
    seqs = {m.snapshot_id: m.ingest_seq for m in staged} | report.kept_seqs
    commit_seqs = {m.commit: m.ingest_seq for m in kept if m.commit}
    jobs = []
    for ref in pending:
        seq = seqs.get(ref.snapshot_id) or commit_seqs.get(ref.commit) or ingest_seq
        if ref.commit:
            commit_seqs.setdefault(ref.commit, seq)
        jobs.append((ref, seq))
    for index, meta in enumerate(stage_pool.stage_all(warehouse, settings, jobs, workers), 1):
        report.metas.append(meta)
        report.warnings += [f"{meta.snapshot_id}: {warning}" for warning in meta.warnings]
        if progress:
            progress(f"staged {index}/{len(jobs)} {meta.snapshot_id}: {meta.accepted} accepted, {meta.quarantined} quarantined")
    if lost:
        raise lost
    return report


def stage_new(warehouse: Path, settings: Settings, listing: Listing, workers: int = 1, progress=None) -> StageReport:
    """Stage every listed snapshot that is not staged intact: the whole ingest without Dagster's partitions
    (the benchmark, tests)."""
    staged = {meta.snapshot_id for meta in staging.staged_metas(warehouse)}
    pending = [ref.snapshot_id for ref in listing.snapshots if ref.snapshot_id not in staged]
    report = stage(warehouse, settings, listing, pending, workers, progress)
    report.already = report.listed - len(pending)
    return report


def _clear_damaged(damaged: list[staging.DamagedSnapshot], listing: Listing, report: StageReport) -> store.DamagedFile | None:
    """Remove every damaged staged snapshot the source still lists, so that it is staged again; the
    error naming the first one it no longer lists (its staging was the only copy), which is kept."""
    listed = {snapshot_key(ref.snapshot_id): ref.snapshot_id for ref in listing.snapshots}
    lost = None
    for snapshot in damaged:
        if snapshot.folder.name in listed:
            shutil.rmtree(snapshot.folder)
            report.repaired.append(f"{listed[snapshot.folder.name]} staged again: {snapshot.problem}")
            if snapshot.meta is not None:
                # Its place among snapshots staged from the same place in history (plain files) is kept.
                report.kept_seqs[snapshot.meta.snapshot_id] = snapshot.meta.ingest_seq
        elif lost is None:
            lost = _lost(snapshot)
    return lost


def _lost(damaged: staging.DamagedSnapshot) -> store.DamagedFile:
    snapshot = f"snapshot {damaged.meta.snapshot_id}" if damaged.meta else "its snapshot"
    return store.DamagedFile(
        f"{damaged.problem}, and {snapshot} is no longer in the source to be staged again: restore {damaged.folder} "
        "from a backup, or delete that folder to drop the snapshot's runs from the warehouse",
        damaged.folder,
    )
