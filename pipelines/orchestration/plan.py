"""What a run of the ingest should cover: which snapshots are new partitions, which partitions to stage.

Every upstream snapshot (commit, file) is a partition of `raw_snapshots`. The CLI, the sensor and the
daily schedule all ask this one question and get one run: the new keys are registered, and the partitions
that are missing, staged by another normalizer (code version) or whose staging is gone are staged as
one range of the partitions (with everything downstream).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from pipelines.ingest import staging
from pipelines.ingest.source.listing import Listing

SNAPSHOTS = dg.DynamicPartitionsDefinition(name="snapshots")
RAW_SNAPSHOTS = dg.AssetKey("raw_snapshots")
# The normalizer's version (a digest of its code) is raw_snapshots' code version: a new one makes every partition
# stale. A snapshot's content never changes under its id, so what a partition holds is a function of that version
# alone: it is the partition's data version too, which Dagster indexes by partition (its code version tag it does not).
NORMALIZER_CODE_VERSION = staging.NORMALIZER_VERSION
STAGED_DATA_VERSION = dg.DataVersion(f"normalizer-{staging.NORMALIZER_VERSION}")
DATA_VERSION_TAG = "dagster/data_version"
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
# Set by a command that listed the source just before it started the run (the head it found): upstream_source then
# takes that listing instead of reading the source a second time.
LISTED_TAG = "liger/listed_head"
# Set instead when that listing failed (its one-line reason): upstream_source fails the run with it, at once, rather
# than wait on the same source a second time.
LISTING_FAILED_TAG = "liger/listing_failed"


@dataclass(frozen=True)
class IngestPlan:
    new_keys: tuple[str, ...]
    # A contiguous range of the partitions, in their order (upstream's history): the first to the last that
    # needs staging. A range is what one Dagster run can cover; the few in it that did not need it are staged again.
    stage_keys: tuple[str, ...]

    @property
    def partition_key(self) -> str | None:
        return self.stage_keys[0] if len(self.stage_keys) == 1 else None

    @property
    def range_tags(self) -> dict[str, str]:
        if len(self.stage_keys) < 2:
            return {}
        return {RANGE_START: self.stage_keys[0], RANGE_END: self.stage_keys[-1]}

    def asset_selection(self, all_keys: list[dg.AssetKey]) -> list[dg.AssetKey] | None:
        """Everything when snapshots are staged, else everything but raw_snapshots (a run without partitions)."""
        if self.stage_keys or not all_keys:
            return None
        return [key for key in all_keys if key != RAW_SNAPSHOTS]

    def summary(self) -> str:
        if not self.stage_keys:
            return "no snapshot to stage"
        shown = self.stage_keys[0] if len(self.stage_keys) == 1 else f"{self.stage_keys[0]} ... {self.stage_keys[-1]}"
        return f"{len(self.new_keys)} new snapshot(s); staging {len(self.stage_keys)} partition(s): {shown}"


def new_keys(instance: dg.DagsterInstance, listing: Listing, registered: list[str] | None = None) -> tuple[str, ...]:
    """The listed snapshots that are not partitions yet, in history order."""
    known = set(instance.get_dynamic_partitions(SNAPSHOTS.name) if registered is None else registered)
    return tuple(ref.snapshot_id for ref in listing.snapshots if ref.snapshot_id not in known)


def plan_ingest(instance: dg.DagsterInstance, warehouse: Path, listing: Listing) -> IngestPlan:
    registered = instance.get_dynamic_partitions(SNAPSHOTS.name)
    new = new_keys(instance, listing, registered)
    order = [*registered, *new]
    listed = {ref.snapshot_id for ref in listing.snapshots}
    needed = {key for key in order if key in listed} - _current(instance, warehouse, registered)
    positions = [i for i, key in enumerate(order) if key in needed]
    stage = tuple(order[positions[0] : positions[-1] + 1]) if positions else ()
    return IngestPlan(new_keys=new, stage_keys=stage)


def _current(instance: dg.DagsterInstance, warehouse: Path, registered: list[str]) -> set[str]:
    """Partitions that need nothing: staged by this normalizer (Dagster's record) and staged intact
    (the files: Dagster's record cannot see a staging folder deleted or damaged by hand)."""
    if not registered:
        return set()
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        RAW_SNAPSHOTS, dg.DagsterEventType.ASSET_MATERIALIZATION, [DATA_VERSION_TAG], asset_partitions=registered
    )
    materialized = {key for key, values in tags.items() if values.get(DATA_VERSION_TAG) == STAGED_DATA_VERSION.value}
    return materialized & {meta.snapshot_id for meta in staging.staged_metas(warehouse)}


def register(instance: dg.DagsterInstance, keys: tuple[str, ...] | list[str]) -> None:
    if keys:
        instance.add_dynamic_partitions(SNAPSHOTS.name, list(keys))
