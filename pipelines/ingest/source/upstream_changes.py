"""Has upstream published data the warehouse lacks? The question the upstream sensor asks.

The answer costs one `git ls-remote` when the branch head has not moved. When it
has, the sensor's own clone (beside the ingest's, so a tick never touches a clone
a run is reading) is fetched and listed; which of its snapshots need a run is the
planner's question (pipelines.orchestration.plan).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from pipelines.core.layout import Layout
from pipelines.core.settings import Settings
from pipelines.ingest.source import Source
from pipelines.ingest.source.configured import source_of
from pipelines.ingest.source.csv_source import CsvSource
from pipelines.ingest.source.listing import Listing
from pipelines.ingest.steps import check_same_source, recorded_listing
from pipelines.storage import store

SENSOR_CACHE = "sensor"


@dataclass(frozen=True)
class UpstreamCheck:
    head: str | None
    # None when the head did not move (nothing was fetched or listed).
    listing: Listing | None = None
    files_at_head_changed: bool = False
    # No head was known before (a sensor's first tick): the head is new to the sensor, not a move upstream.
    first: bool = False

    def summary(self, staging: str | None = None) -> str:
        """One line for the sensor's log; `staging` is the planner's summary of the run it asks for, when that
        run stages snapshots (the planner sits above the ingest: pipelines.orchestration.plan)."""
        if self.head is None:
            return "the upstream branch does not exist (yet): nothing to ingest"
        if self.listing is None:
            return f"upstream head unchanged at {self.head[:12]}"
        if staging:
            return f"upstream head {self.head[:12]}: {staging}"
        if self.files_at_head_changed:
            return f"upstream head {self.head[:12]} added or removed a data file"
        if self.first:
            return f"upstream head {self.head[:12]}: the warehouse holds every data file of it already"
        return f"upstream head moved to {self.head[:12]} without changing a data file"


def recorded_source(warehouse: Path) -> tuple[str, tuple[str, ...] | None] | None:
    """The source the warehouse was built from, as LIGER_SOURCE gave it, and the streams it read (None when its
    listing predates recorded streams); None for a warehouse never synced (or a damaged listing, which the next
    sync writes again)."""
    raw = store.read_state(Layout(warehouse).listing)
    if not isinstance(raw.get("source"), str) or not raw["source"]:
        return None
    streams = raw.get("identity", {}).get("streams") if isinstance(raw.get("identity"), dict) else None
    names = (
        tuple(s["stream"] for s in streams if isinstance(s, dict) and isinstance(s.get("stream"), str)) if isinstance(streams, list) else ()
    )
    return raw["source"], names or None


def sensor_listing(warehouse: Path, settings: Settings, source: Source | None = None) -> Listing:
    """What upstream holds now, from the sensor's own clone (fetched first)."""
    check_same_source(warehouse, settings)  # else a tick would ask for a run that can only be refused
    source = source or source_of(replace(settings, cache_dir=settings.cache_dir / SENSOR_CACHE))
    if not isinstance(source, CsvSource):
        source.sync()  # a CSV source reads its content to hash it when listed
    return source.listing()


def check_upstream(warehouse: Path, settings: Settings, last_head: str | None) -> UpstreamCheck:
    """Compare upstream with the warehouse; only a moved head costs more than `git ls-remote`."""
    check_same_source(warehouse, settings)
    source = source_of(replace(settings, cache_dir=settings.cache_dir / SENSOR_CACHE))
    head = source.remote_head()
    if head is None or head == last_head:
        return UpstreamCheck(head=head)
    listing = sensor_listing(warehouse, settings, source)
    try:
        recorded = recorded_listing(warehouse)
    except store.DamagedFile:
        recorded = None  # the run this asks for lists the source again
    recorded_files = set(recorded.files_at_head) if recorded else set()
    return UpstreamCheck(
        head=listing.head or head,
        listing=listing,
        files_at_head_changed=recorded_files != set(listing.files_at_head),
        first=last_head is None,
    )
