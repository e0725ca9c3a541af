"""Contract checks on the assembled tables, as pure functions: (passed, description, details)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.core import catalog
from pipelines.core.layout import Layout

# Snapshots a check names in its description and details.
NAMED = 5


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    description: str
    details: dict = field(default_factory=dict)


def _read(warehouse: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(Layout(warehouse).table(name))


def run_ids_unique(warehouse: Path) -> CheckOutcome:
    runs = _read(warehouse, "runs")
    dupes = runs.filter(pl.col("run_id").is_duplicated())["run_id"].unique().to_list()
    return CheckOutcome(not dupes, f"{len(dupes)} run_id values appear more than once", {"examples": dupes[:5]})


def references_exist(warehouse: Path) -> CheckOutcome:
    runs = _read(warehouse, "runs")
    envs = set(_read(warehouse, "environments")["environment_digest"])
    protos = set(_read(warehouse, "protocols")["protocol_digest"])
    missing_env = runs.filter(~pl.col("environment_digest").is_in(envs)).height
    missing_proto = runs.filter(~pl.col("protocol_digest").is_in(protos)).height
    measured = set(_read(warehouse, "measurements")["run_id"])
    orphan = len(measured - set(runs["run_id"]))
    return CheckOutcome(
        missing_env == 0 and missing_proto == 0 and orphan == 0,
        f"{missing_env} runs lack their environment, {missing_proto} their protocol; {orphan} measured run ids are not runs",
    )


def quantiles_ordered(warehouse: Path) -> CheckOutcome:
    runs = _read(warehouse, "runs").filter(pl.col("status") == "passed")
    bad = runs.filter(
        (pl.col("p20").is_not_null() & (pl.col("p20") > pl.col("value")))
        | (pl.col("p80").is_not_null() & (pl.col("value") > pl.col("p80")))
    )
    return CheckOutcome(bad.is_empty(), f"{bad.height} passed runs break p20 <= p50 <= p80", {"examples": bad["run_id"].head(5).to_list()})


def snapshot_accounting(warehouse: Path) -> CheckOutcome:
    """SPEC section 5: row_count = accepted + quarantined, every accepted row maps to one run and every quarantined
    row is held, for every snapshot, a rejected one too (its rows are quarantined). Fails naming the snapshots."""
    snaps = _read(warehouse, "snapshots")
    mapped = _read(warehouse, "run_snapshots").group_by("snapshot_id").agg(pl.len().alias("mapped"))
    held = _read(warehouse, "quarantine").group_by("snapshot_id").agg(pl.len().alias("held"))
    joined = (
        snaps.join(mapped, on="snapshot_id", how="left")
        .join(held, on="snapshot_id", how="left")
        .with_columns(pl.col("mapped").fill_null(0), pl.col("held").fill_null(0))
    )
    bad = joined.filter(
        (pl.col("row_count") != pl.col("accepted") + pl.col("quarantined"))
        | (pl.col("accepted") != pl.col("mapped"))
        | (pl.col("quarantined") != pl.col("held"))
    )
    named = [
        f"{r['snapshot_id']} ({r['row_count']} rows, {r['accepted']} accepted with {r['mapped']} mapped to runs, "
        f"{r['quarantined']} quarantined with {r['held']} held)"
        for r in bad.head(NAMED).iter_rows(named=True)
    ]
    description = "every row of every snapshot is accepted once or quarantined once"
    if named:
        description = f"{bad.height} snapshot(s) do not account for every row: " + "; ".join(named)
    return CheckOutcome(bad.is_empty(), description, {"unaccounted": bad["snapshot_id"].to_list()[:NAMED]})


def snapshots_rejected(warehouse: Path) -> CheckOutcome:
    """A warning, never blocking: the snapshots refused whole (their rows wait in quarantine), each named with why."""
    rejected = _read(warehouse, "snapshots").filter(pl.col("status") == "rejected")
    named = [f"{snapshot_id} ({reason})" for snapshot_id, reason in rejected.select("snapshot_id", "reason").head(NAMED).rows()]
    description = "no snapshot was rejected"
    if named:
        description = f"{rejected.height} snapshot(s) rejected whole, their rows in quarantine: " + "; ".join(named)
    return CheckOutcome(rejected.is_empty(), description, {"rejected": rejected.select("snapshot_id", "reason").rows()[:NAMED]})


def catalog_coverage(warehouse: Path) -> CheckOutcome:
    runs = _read(warehouse, "runs")
    unknown_gpus = sorted(set(runs["gpu_name"]) - set(catalog.gpu_catalog()))
    unknown_kernels = sorted(k for k in set(runs["kernel"]) if not catalog.is_known_kernel(k))
    return CheckOutcome(
        not unknown_gpus and not unknown_kernels,
        f"GPUs missing from pipelines/catalog/gpus.csv: {unknown_gpus or 'none'}; "
        f"kernels missing from pipelines/catalog/kernels.csv: {unknown_kernels or 'none'}",
    )
