"""Contract checks on the assembled tables, as pure functions: (passed, description, details).

Each reads only the columns it judges, batch by batch (table_scan): a build is judged in the memory it was
written in, whatever its number of rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.assemble import table_scan
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
    """A table with a row per snapshot, GPU or protocol: small whatever the number of runs."""
    return pl.read_parquet(Layout(warehouse).table(name))


def _path(warehouse: Path, name: str) -> Path:
    return Layout(warehouse).table(name)


def run_ids_unique(warehouse: Path) -> CheckOutcome:
    runs = _path(warehouse, "runs")
    found = table_scan.repeated_ids(runs, "run_id")
    if found is None:
        rows = table_scan.duckdb_count("SELECT run_id FROM runs GROUP BY run_id HAVING count(*) > 1 ORDER BY run_id", {"runs": runs})
        found = len(rows), [run_id for (run_id,) in rows[:5]]
    repeated, examples = found
    return CheckOutcome(not repeated, f"{repeated} run_id values appear more than once", {"examples": examples})


def references_exist(warehouse: Path) -> CheckOutcome:
    envs = _read(warehouse, "environments")["environment_digest"].implode()
    protos = _read(warehouse, "protocols")["protocol_digest"].implode()
    missing_env = missing_proto = 0
    for frame in table_scan.batches(_path(warehouse, "runs"), ["environment_digest", "protocol_digest"]):
        missing_env += int((~frame["environment_digest"].is_in(envs)).sum())
        missing_proto += int((~frame["protocol_digest"].is_in(protos)).sum())
    orphan = _orphan_measurements(warehouse)
    return CheckOutcome(
        missing_env == 0 and missing_proto == 0 and orphan == 0,
        f"{missing_env} runs lack their environment, {missing_proto} their protocol; {orphan} measured run ids are not runs",
    )


def _orphan_measurements(warehouse: Path) -> int:
    """Distinct run ids of measurements that are no run's."""
    runs, measurements = _path(warehouse, "runs"), _path(warehouse, "measurements")
    orphan = table_scan.missing_ids(measurements, "run_id", runs, "run_id")
    if orphan is None:
        sql = "SELECT count(DISTINCT run_id) FROM measurements m WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = m.run_id)"
        ((orphan,),) = table_scan.duckdb_count(sql, {"runs": runs, "measurements": measurements})
    return orphan


def quantiles_ordered(warehouse: Path) -> CheckOutcome:
    broken = (pl.col("status") == "passed") & (
        (pl.col("p20").is_not_null() & (pl.col("p20") > pl.col("value")))
        | (pl.col("p80").is_not_null() & (pl.col("value") > pl.col("p80")))
    )
    bad, examples = 0, []
    for frame in table_scan.batches(_path(warehouse, "runs"), ["run_id", "status", "p20", "value", "p80"]):
        found = frame.filter(broken)["run_id"]
        bad += found.len()
        examples.extend(found.head(5 - len(examples)).to_list())
    return CheckOutcome(bad == 0, f"{bad} passed runs break p20 <= p50 <= p80", {"examples": examples})


def snapshot_accounting(warehouse: Path) -> CheckOutcome:
    """SPEC section 5: row_count = accepted + quarantined, every accepted row maps to one run and every quarantined
    row is held, for every snapshot, a rejected one too (its rows are quarantined). Fails naming the snapshots."""
    snaps = _read(warehouse, "snapshots")
    mapped = _rows_per_snapshot(_path(warehouse, "run_snapshots"), "mapped")
    held = _rows_per_snapshot(_path(warehouse, "quarantine"), "held")
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


def _rows_per_snapshot(path: Path, name: str) -> pl.DataFrame:
    """A table's rows counted per snapshot_id, as `name`."""
    counts = [frame.group_by("snapshot_id").len(name) for frame in table_scan.batches(path, ["snapshot_id"])]
    empty = pl.DataFrame(schema={"snapshot_id": pl.String, name: pl.UInt32})
    return pl.concat([empty, *counts]).group_by("snapshot_id").agg(pl.col(name).sum().cast(pl.Int64))


def snapshots_rejected(warehouse: Path) -> CheckOutcome:
    """A warning, never blocking: the snapshots refused whole (their rows wait in quarantine), each named with why."""
    rejected = _read(warehouse, "snapshots").filter(pl.col("status") == "rejected")
    named = [f"{snapshot_id} ({reason})" for snapshot_id, reason in rejected.select("snapshot_id", "reason").head(NAMED).rows()]
    description = "no snapshot was rejected"
    if named:
        description = f"{rejected.height} snapshot(s) rejected whole, their rows in quarantine: " + "; ".join(named)
    return CheckOutcome(rejected.is_empty(), description, {"rejected": rejected.select("snapshot_id", "reason").rows()[:NAMED]})


def catalog_coverage(warehouse: Path) -> CheckOutcome:
    gpus: set[str] = set()
    kernels: set[str] = set()
    for frame in table_scan.batches(_path(warehouse, "runs"), ["gpu_name", "kernel"]):
        gpus.update(frame["gpu_name"].unique().to_list())
        kernels.update(frame["kernel"].unique().to_list())
    unknown_gpus = sorted(gpus - set(catalog.gpu_catalog()))
    unknown_kernels = sorted(k for k in kernels if not catalog.is_known_kernel(k))
    return CheckOutcome(
        not unknown_gpus and not unknown_kernels,
        f"GPUs missing from pipelines/catalog/gpus.csv: {unknown_gpus or 'none'}; "
        f"kernels missing from pipelines/catalog/kernels.csv: {unknown_kernels or 'none'}",
    )
