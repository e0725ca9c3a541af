"""Where each staged snapshot stands in the source's history as the source shows it now (SPEC section 1).

A force-push can remove commits: their snapshots stay staged (nothing is lost) but are no longer on the branch.
The snapshots still on it come first, in the branch's order, so runs, `latest` and `in_latest` are what a clean
build from the branch as it is now would make; the ones it lost follow, marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import polars as pl

from pipelines.core.kernel_backends import backend_of
from pipelines.ingest.normalize import SOURCES
from pipelines.ingest.source import Listing
from pipelines.ingest.staging import SnapshotMeta


@dataclass(frozen=True)
class History:
    staged: tuple[SnapshotMeta, ...]
    # The source's listing at the last sync; None (tests, a warehouse never synced) counts every staged snapshot on its branch.
    listing: Listing | None = None

    @cached_property
    def _listed(self) -> dict[str, int] | None:
        if self.listing is None:
            return None
        return {ref.snapshot_id: ref.sequence for ref in self.listing.snapshots}

    @cached_property
    def _main_places(self) -> dict[str, tuple]:
        """{benchmarked commit: (main commit, first-parent position, commit time)} as the listing places it now."""
        if self.listing is None:
            return {}
        return {
            ref.benchmarked_commit: (ref.main_commit, ref.main_position, ref.main_committed_at)
            for ref in self.listing.snapshots
            if ref.benchmarked_commit and ref.main_position is not None
        }

    def main_place(self, meta: SnapshotMeta) -> tuple:
        """(main commit, first-parent position, commit time) of a CI snapshot's benchmarked commit in the data stream's
        branch as it is now, also for a snapshot no longer listed whose commit another one names; Nones where unknown."""
        return self._main_places.get(meta.benchmarked_commit, (None, None, None)) if meta.stream == "ci" else (None, None, None)

    def on_branch(self, meta: SnapshotMeta) -> bool:
        # A plain CSV's listing names its current content only, but its contents are snapshots in the order ingested,
        # none a rewrite of another (SPEC section 2): every one stays, so first seen and first values do not move.
        return self._listed is None or meta.snapshot_id in self._listed or meta.stream == "file"

    def sequence(self, meta: SnapshotMeta) -> int:
        """Its place in the branch now (a rewrite renumbers what follows it); the place it had for one no longer on it."""
        return meta.sequence if self._listed is None else self._listed.get(meta.snapshot_id, meta.sequence)

    @cached_property
    def ordered(self) -> tuple[SnapshotMeta, ...]:
        """Oldest first: the snapshots on the branch by their place in it, then by when a plain file was ingested; then those
        no longer on it, likewise."""
        return tuple(sorted(self.staged, key=lambda m: (not self.on_branch(m), self.sequence(m), m.ingest_seq, m.source_file)))

    @cached_property
    def off_branch(self) -> frozenset[str]:
        return frozenset(m.snapshot_id for m in self.staged if not self.on_branch(m))

    @cached_property
    def ci(self) -> frozenset[str]:
        return frozenset(m.snapshot_id for m in self.staged if m.stream == "ci")

    @cached_property
    def released(self) -> frozenset[str]:
        """The CI snapshots whose folder names a release (`<commit>-v<version>/`)."""
        return frozenset(m.snapshot_id for m in self.staged if m.stream == "ci" and m.release)

    @cached_property
    def latest(self) -> frozenset[str]:
        """Per file still present at the branch's head, the snapshot of its content there, or the newest ingested one
        on the branch before it when that one was rejected (a file back to an older content has no newer snapshot)."""
        at_head = set(self.listing.head_snapshots or ()) if self.listing is not None else set()
        newest: dict[str, SnapshotMeta] = {}
        reached: set[str] = set()
        for meta in self.ordered:
            if meta.source_file in reached or not self.on_branch(meta):
                continue
            if meta.status == "ingested":
                newest[meta.source_file] = meta
            if meta.snapshot_id in at_head:
                reached.add(meta.source_file)
        files = None if self.listing is None else set(self.listing.files_at_head)
        return frozenset(m.snapshot_id for f, m in newest.items() if files is None or f in files)

    def sources(self) -> pl.DataFrame:
        """Per snapshot, what its runs take from it: source, file, stream, backend, and its CI folder's commit and release."""
        return pl.DataFrame(
            [
                (m.snapshot_id, m.source, m.source_file, m.stream, backend_of(m.source_file, m.stream), m.benchmarked_commit, m.release)
                for m in self.staged
            ],
            schema=SOURCES,
            orient="row",
        )
