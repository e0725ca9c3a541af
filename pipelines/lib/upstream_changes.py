"""Has upstream published data the warehouse lacks? The question the upstream sensor asks.

The answer costs one `git ls-remote` when the branch head has not moved. When it
has, the sensor's own clone (beside the ingest's, so a sensor tick never touches
a clone a run is reading) is fetched and its listing compared with what the
warehouse already staged: a commit that changed no data file asks for no run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from pipelines.lib import ingest, store
from pipelines.lib.source_git import GitSource
from pipelines.lib.warehouse import SourceSettings, check_same_source, recorded_listing

SENSOR_CACHE = "sensor"


@dataclass(frozen=True)
class UpstreamCheck:
    head: str | None
    head_moved: bool
    new_snapshots: tuple[str, ...] = ()
    files_at_head_changed: bool = False

    @property
    def needs_ingest(self) -> bool:
        return bool(self.new_snapshots) or self.files_at_head_changed

    def summary(self) -> str:
        if self.head is None:
            return "the upstream branch does not exist (yet): nothing to ingest"
        if not self.head_moved:
            return f"upstream head unchanged at {self.head[:12]}"
        if self.new_snapshots:
            return f"upstream head {self.head[:12]} has {len(self.new_snapshots)} new snapshot(s): {', '.join(self.new_snapshots[:5])}"
        if self.files_at_head_changed:
            return f"upstream head {self.head[:12]} added or removed a data file"
        return f"upstream head moved to {self.head[:12]} without changing a data file"


def check_upstream(warehouse: Path, settings: SourceSettings, last_head: str | None) -> UpstreamCheck:
    """Compare upstream with the warehouse; only a moved head costs more than `git ls-remote`."""
    check_same_source(warehouse, settings)  # else a tick would ask for a run that can only be refused
    source = replace(settings, cache_dir=settings.cache_dir / SENSOR_CACHE).open()
    head = source.remote_head()
    if head is None or head == last_head:
        return UpstreamCheck(head=head, head_moved=False)
    if isinstance(source, GitSource):
        source.sync()  # a CSV source already read its content to hash it
    listing = source.listing()
    staged = {meta.snapshot_id for meta in ingest.staged_metas(warehouse)}
    new = tuple(ref.snapshot_id for ref in listing.snapshots if ref.snapshot_id not in staged)
    try:
        recorded = recorded_listing(warehouse)
    except store.DamagedFile:
        recorded = None  # the run this asks for lists the source again
    recorded_files = set(recorded.files_at_head) if recorded else set()
    return UpstreamCheck(
        head=listing.head or head,
        head_moved=True,
        new_snapshots=new,
        files_at_head_changed=recorded_files != set(listing.files_at_head),
    )
