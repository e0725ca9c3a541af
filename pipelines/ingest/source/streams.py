"""A repository read as several streams (SPEC section 7): `data` (`main`'s `benchmark/data/`) and `ci` (`gh-pages`'
`benchmarks/<commit>/benchmark.csv`), each a branch and a file pattern, listed as one history.

The streams' snapshots are merged oldest first by commit time, each stream keeping its own order, and numbered
again; a snapshot id names its commit, so the streams never share one.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from pipelines.ingest.source.git_source import GitSource, place_in_main
from pipelines.ingest.source.listing import BranchNotFound, Listing, SnapshotRef, SourceError

_NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Stream:
    name: str  # `data` or `ci`
    source: str
    branch: str
    file_glob: str
    # The default `ci` stream of a repository that has no such branch (a fork, the data-only bundle) reads nothing;
    # a stream the user named is refused when its branch is missing.
    optional: bool = False


class GitStreams:
    """The streams of one or more git repositories, with the interface of one source."""

    def __init__(self, streams: tuple[Stream, ...], cache_dir: Path):
        self.streams = streams
        self.sources = {s.name: GitSource(s.source, cache_dir, s.branch, s.file_glob, stream=s.name) for s in streams}
        self.source = streams[0].source
        self.absent: list[str] = []

    def remote_head(self) -> str | None:
        """The heads of the streams' branches that exist, joined: it moves when any of them does (a branch that
        appears too). One stream's head is its commit, as a single branch's is."""
        heads = [head for head in (self._head(stream) for stream in self.streams) if head]
        return "+".join(heads) or None

    def _head(self, stream: Stream) -> str | None:
        head = self.sources[stream.name].remote_head()
        if head is None and not stream.optional:
            raise BranchNotFound(stream.source, stream.branch)
        return head

    def sync(self) -> None:
        self.absent = []
        for stream in self.streams:
            try:
                self.sources[stream.name].sync()
            except BranchNotFound:
                if not stream.optional:
                    raise
                self.absent.append(stream.name)

    def listing(self) -> Listing:
        listings = {}
        for stream in self.streams:
            if stream.name in self.absent or (stream.optional and not self.sources[stream.name].clone_dir.is_dir()):
                continue
            listings[stream.name] = self.sources[stream.name].listing()
        if not listings:
            raise SourceError(f"none of the streams {', '.join(s.name for s in self.streams)} could be read from {self.source!r}")
        if len(listings) == 1:
            # One stream read (the other off, or a branch the repository lacks): its history as a single branch lists it.
            [snapshots] = [listing.snapshots for listing in listings.values()]
        else:
            merged = heapq.merge(*(listing.snapshots for listing in listings.values()), key=lambda ref: ref.committed_at or _NEVER)
            snapshots = tuple(replace(ref, sequence=number) for number, ref in enumerate(merged, 1))
        if "ci" in listings and "data" in listings:
            # Each CI folder's commit placed in the data stream's branch (`main`), where it holds it.
            snapshots = place_in_main(snapshots, self.sources["data"].first_parent())
        head = "+".join(listing.head for listing in listings.values() if listing.head) or None
        files = tuple(sorted(f for listing in listings.values() for f in listing.files_at_head))
        at_head = tuple(s for listing in listings.values() for s in (listing.head_snapshots or ()))
        return Listing(head=head, snapshots=snapshots, files_at_head=files, head_snapshots=at_head)

    def read(self, ref: SnapshotRef) -> bytes:
        return self.sources[ref.stream].read(ref)
