"""What a run of the ingest should cover: which snapshots are new partitions, which partitions to stage.

Every upstream snapshot (commit, file) is a partition of `raw_snapshots`. The CLI, the sensor and the
daily schedule all ask this one question and get one run: the new keys are registered, and the partitions
whose record in Dagster does not say what their staging folder holds (never staged, staged from other content or
by another normalizer, or a folder gone or damaged) are staged as one range of the partitions (with everything
downstream).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from pipelines.ingest import staging
from pipelines.ingest.source.listing import Listing
from pipelines.orchestration.kept_builds import kept_data_versions

SNAPSHOTS = dg.DynamicPartitionsDefinition(name="snapshots")
RAW_SNAPSHOTS = dg.AssetKey("raw_snapshots")
UPSTREAM_SOURCE = dg.AssetKey("upstream_source")
# The normalizer's version (a digest of its code) is raw_snapshots' code version: a new one shows every partition stale.
NORMALIZER_CODE_VERSION = staging.NORMALIZER_VERSION
# A partition's data version is what it holds (staging.content_version: the file's sha256 and the normalizer), which
# Dagster indexes by partition (the code version tag it does not): the plan reads it back from there.
DATA_VERSION_TAG = "dagster/data_version"
CODE_VERSION_TAG = "dagster/code_version"
USER_DATA_VERSION_TAG = "dagster/data_version_is_user_provided"
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
    # The assets whose published builds a run would keep as they are, with the data versions Dagster holds for them
    # (orchestration/kept_builds.py): all of them when nothing changed.
    kept: frozenset[str] = frozenset()

    @property
    def partition_key(self) -> str | None:
        return self.stage_keys[0] if len(self.stage_keys) == 1 else None

    @property
    def range_tags(self) -> dict[str, str]:
        if len(self.stage_keys) < 2:
            return {}
        return {RANGE_START: self.stage_keys[0], RANGE_END: self.stage_keys[-1]}

    def asset_selection(self, all_keys: list[dg.AssetKey]) -> list[dg.AssetKey] | None:
        """Everything when snapshots are staged; upstream_source alone when every other asset would keep its build and
        data version (nothing changed: the run lists the source and records it); else everything but raw_snapshots."""
        if self.stage_keys or not all_keys:
            return None
        if self.unchanged(all_keys):
            return [UPSTREAM_SOURCE]
        return [key for key in all_keys if key != RAW_SNAPSHOTS]

    def unchanged(self, all_keys: list[dg.AssetKey]) -> bool:
        """True when no snapshot is staged and every asset but the source ones would be kept as Dagster holds it."""
        below = {key.to_user_string() for key in all_keys} - {RAW_SNAPSHOTS.to_user_string(), UPSTREAM_SOURCE.to_user_string()}
        return not self.stage_keys and UPSTREAM_SOURCE in all_keys and bool(below) and below <= self.kept

    def summary(self) -> str:
        if not self.stage_keys:
            return "no snapshot to stage" + ("; every build kept as it is" if self.kept else "")
        shown = self.stage_keys[0] if len(self.stage_keys) == 1 else f"{self.stage_keys[0]} ... {self.stage_keys[-1]}"
        return f"{len(self.new_keys)} new snapshot(s); staging {len(self.stage_keys)} partition(s): {shown}"


def new_keys(instance: dg.DagsterInstance, listing: Listing, registered: list[str] | None = None) -> tuple[str, ...]:
    """The listed snapshots that are not partitions yet, in history order."""
    known = set(instance.get_dynamic_partitions(SNAPSHOTS.name) if registered is None else registered)
    return tuple(ref.snapshot_id for ref in listing.snapshots if ref.snapshot_id not in known)


def plan_ingest(instance: dg.DagsterInstance, warehouse: Path, listing: Listing, baselines: Sequence[str]) -> IngestPlan:
    """Dagster decides: a listed partition is staged unless its latest materialization's data version is what its
    staging folder holds. The folder is the storage, read only to know that it is there and intact (Dagster's record
    cannot see a folder deleted or damaged by hand); a folder staged by another normalizer counts as not there.
    With nothing to stage, the assets below are `kept` when each stage would keep its published build for `listing`
    and `baselines` and Dagster's latest data version of each is that build's."""
    registered = instance.get_dynamic_partitions(SNAPSHOTS.name)
    new = new_keys(instance, listing, registered)
    order = [*registered, *new]
    recorded = recorded_versions(instance, registered)
    held = {meta.snapshot_id: staging.content_version(meta) for meta in staging.staged_metas(warehouse)}
    needed = {ref.snapshot_id for ref in listing.snapshots if recorded.get(ref.snapshot_id, "") != held.get(ref.snapshot_id)}
    positions = [i for i, key in enumerate(order) if key in needed]
    stage = tuple(order[positions[0] : positions[-1] + 1]) if positions else ()
    return IngestPlan(
        new_keys=new, stage_keys=stage, kept=frozenset() if stage or new else kept_assets(instance, warehouse, listing, baselines)
    )


def kept_assets(instance: dg.DagsterInstance, warehouse: Path, listing: Listing, baselines: Sequence[str]) -> frozenset[str]:
    """The assets below the staging whose latest data version in Dagster is the one a run would give them now; none
    unless every stage would keep its build."""
    try:
        expected = kept_data_versions(warehouse, listing, baselines)
    except Exception:  # a question that cannot be answered means a run of everything, whose steps say why
        return frozenset()
    if expected is None:
        return frozenset()
    recorded = {name: instance.get_latest_data_version_record(dg.AssetKey(name)) for name in expected}
    same = all(
        record is not None and record.asset_materialization.tags.get(DATA_VERSION_TAG) == expected[name]
        for name, record in recorded.items()
    )
    return frozenset(expected) if same else frozenset()


def recorded_versions(instance: dg.DagsterInstance, keys: list[str]) -> dict[str, str]:
    """Dagster's record: the data version of each partition's latest materialization (those never materialized: none)."""
    if not keys:
        return {}
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        RAW_SNAPSHOTS, dg.DagsterEventType.ASSET_MATERIALIZATION, [DATA_VERSION_TAG], asset_partitions=keys
    )
    return {key: values[DATA_VERSION_TAG] for key, values in tags.items() if DATA_VERSION_TAG in values}


def staged_from(instance: dg.DagsterInstance) -> dict[str, str]:
    """The tags Dagster writes on a materialization for what it was computed from, here upstream_source's latest
    materialization (as Dagster records it on a range's events), which its staleness compares."""
    records = instance.fetch_materializations(UPSTREAM_SOURCE, limit=1).records
    if not records:
        return {}
    name = UPSTREAM_SOURCE.to_user_string()
    return {
        f"dagster/input_data_version/{name}": records[0].asset_materialization.tags.get(DATA_VERSION_TAG, ""),
        f"dagster/input_event_pointer/{name}": str(records[0].storage_id),
    }


def partition_materialization(meta: staging.SnapshotMeta, metadata: dict, inputs: dict[str, str]) -> dg.AssetMaterialization:
    """One partition's materialization as a range run reports it: Dagster gives every partition of a range one data
    version (dagster-io/dagster#34013), so each partition's own (what it holds) is reported after the range's, with
    the tags Dagster's staleness reads: the code version and `inputs` (`staged_from`)."""
    own = {DATA_VERSION_TAG: staging.content_version(meta), CODE_VERSION_TAG: NORMALIZER_CODE_VERSION, USER_DATA_VERSION_TAG: "true"}
    return dg.AssetMaterialization(asset_key=RAW_SNAPSHOTS, partition=meta.snapshot_id, metadata=metadata, tags={**inputs, **own})


def register(instance: dg.DagsterInstance, keys: tuple[str, ...] | list[str]) -> None:
    if keys:
        instance.add_dynamic_partitions(SNAPSHOTS.name, list(keys))
