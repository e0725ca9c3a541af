"""Assemble the warehouse tables (SPEC section 4) from every staged snapshot."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

import polars as pl

from pipelines.lib import catalog, documents, schemas
from pipelines.lib.canonical import canonical_json, digest
from pipelines.lib.ingest import SnapshotMeta, snapshot_key, staged_metas, staging_dir
from pipelines.lib.normalize import UNIT_CONVERSIONS

STATE = "_state.json"
ORDER = ("_sequence", "_ingest_seq", "_source_file")
# The run key of SPEC section 2, in the column names of RUN_ROWS.
RUN_KEY = ("kernel", "provider", "pass", "metric", "x_name", "x_value", "raw_config", "gpu_name", "raw_timestamp")


def snapshot_order(metas: list[SnapshotMeta]) -> list[SnapshotMeta]:
    """Oldest first: by position in the source's history, then by when a plain file was ingested."""
    return sorted(metas, key=lambda m: (m.sequence, m.ingest_seq, m.source_file))


def latest_snapshot_ids(metas: list[SnapshotMeta], files_at_head: list[str] | None) -> set[str]:
    """The newest ingested snapshot of each file still present at the source's head."""
    newest: dict[str, SnapshotMeta] = {}
    for meta in snapshot_order([m for m in metas if m.status == "ingested"]):
        newest[meta.source_file] = meta
    return {m.snapshot_id for f, m in newest.items() if files_at_head is None or f in files_at_head}


def fingerprint(metas: list[SnapshotMeta], files_at_head: list[str] | None) -> str:
    """Changes whenever an assembled table could change: staged snapshots, head files, catalogs."""
    parts = {
        "snapshots": sorted(json.dumps(asdict(m), sort_keys=True) for m in metas),
        "files_at_head": sorted(files_at_head) if files_at_head is not None else None,
        "catalogs": [p.read_text() for p in sorted(catalog.CATALOG_DIR.glob("*.csv"))],
    }
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


def _order_frame(metas: list[SnapshotMeta]) -> pl.DataFrame:
    ordered = snapshot_order(metas)
    return pl.DataFrame(
        {
            "snapshot_id": [m.snapshot_id for m in ordered],
            "_position": list(range(len(ordered))),
        },
        schema={"snapshot_id": pl.String, "_position": pl.Int64},
    )


def _parts(warehouse: Path, metas: list[SnapshotMeta], prefix: str, schema: pl.Schema) -> pl.LazyFrame:
    files = [
        str(path)
        for m in metas
        for path in sorted((staging_dir(warehouse) / snapshot_key(m.snapshot_id)).glob(f"{prefix}-*.parquet"))
    ]
    if not files:
        return pl.LazyFrame(schema=schema)
    return pl.scan_parquet(files, schema=schema)


def assemble(warehouse: Path, files_at_head: list[str] | None) -> dict[str, pl.DataFrame]:
    metas = staged_metas(warehouse)
    order = _order_frame(metas)
    latest = latest_snapshot_ids(metas, files_at_head)

    rows = (
        _parts(warehouse, metas, "rows", schemas.RUN_ROWS)
        .join(order.lazy(), on="snapshot_id", how="left")
        .sort("_position", "row_number")
    )
    runs = (
        rows.group_by(RUN_KEY, maintain_order=True)
        .agg(
            pl.all().exclude("snapshot_id", "row_number", "_position", *RUN_KEY).first(),
            pl.col("snapshot_id").first().alias("first_seen_snapshot"),
            pl.col("snapshot_id").last().alias("last_seen_snapshot"),
            pl.col("snapshot_id").is_in(sorted(latest)).any().alias("in_latest"),
        )
        .collect(engine="streaming")
    )
    runs = _disambiguate(runs)
    if not runs["_renamed"].any():
        run_snapshots = rows.select("run_id", "snapshot_id", "row_number").collect(engine="streaming")
    else:
        run_snapshots = (
            rows.select(*RUN_KEY, "snapshot_id", "row_number")
            .join(runs.lazy().select(*RUN_KEY, "run_id"), on=list(RUN_KEY), how="left", nulls_equal=True)
            .select("run_id", "snapshot_id", "row_number")
            .collect(engine="streaming")
        )
    runs = runs.sort("run_id").select(schemas.RUNS.names()).cast(schemas.RUNS)

    quarantine = (
        _parts(warehouse, metas, "quarantine", schemas.QUARANTINE)
        .join(order.lazy(), on="snapshot_id", how="left")
        .sort("_position", "row_number")
        .select(schemas.QUARANTINE.names())
        .collect()
    )
    return {
        "runs": runs,
        "measurements": measurements(runs),
        "environments": environments(runs["gpu_name"].unique().sort().to_list()),
        "protocols": protocols(runs.select("metric", "pass").unique().sort("metric", "pass").rows()),
        "snapshots": snapshots(metas, latest),
        "run_snapshots": run_snapshots.cast(schemas.RUN_SNAPSHOTS),
        "quarantine": quarantine,
    }


def _disambiguate(runs: pl.DataFrame) -> pl.DataFrame:
    """Distinct runs whose ids coincide (keys that differ only in what slugs and dropped
    config keys lose) each get a suffix from a hash of their key, so every id stays unique."""
    clashing = runs["run_id"].is_duplicated()
    runs = runs.with_columns(pl.col("run_id").alias("_key_id"), clashing.alias("_renamed"))
    if not clashing.any():
        return runs
    key_text = pl.concat_str([pl.col(c).fill_null("") for c in RUN_KEY], separator="\x1f")
    suffix = key_text.map_elements(lambda key: hashlib.sha256(key.encode()).hexdigest()[:8], return_dtype=pl.String)
    return runs.with_columns(
        pl.when(pl.col("_renamed")).then(pl.format("{}~{}", "run_id", suffix)).otherwise("run_id").alias("run_id")
    )


def measurements(runs: pl.DataFrame) -> pl.DataFrame:
    metric_names = {m: cm for (m, _), (cm, _, _) in UNIT_CONVERSIONS.items()}
    passed = runs.filter(pl.col("status") == "passed")
    frames = [
        passed.select(
            "run_id",
            pl.col("metric").replace(metric_names).alias("metric"),
            pl.lit(stat).alias("statistic"),
            pl.col(value).alias("value"),
            "unit",
            pl.col(raw).alias("raw_value"),
            "raw_unit",
        )
        for stat, value, raw in (("p20", "p20", "raw_p20"), ("p50", "value", "raw_p50"), ("p80", "p80", "raw_p80"))
    ]
    return (
        pl.concat(frames)
        .filter(pl.col("value").is_not_null())
        .sort("run_id", "statistic")
        .cast(schemas.MEASUREMENTS)
    )


def environments(gpu_names: list[str]) -> pl.DataFrame:
    rows = []
    for gpu_name in gpu_names:
        gpu = catalog.gpu(gpu_name)
        env = documents.environment(gpu)
        rows.append(
            {
                "environment_digest": digest(env["spec"]),
                "name": env["name"],
                "title": env["title"],
                "gpu_name": gpu_name,
                "vendor": gpu.vendor,
                "product": gpu.product,
                "form_factor": gpu.form_factor,
                "architecture": gpu.architecture,
                "known": gpu.known,
                "spec": canonical_json(env["spec"]),
            }
        )
    return pl.DataFrame(rows, schema=schemas.ENVIRONMENTS)


def protocols(metric_passes: list[tuple[str, str]]) -> pl.DataFrame:
    rows = []
    for metric, pass_ in metric_passes:
        protocol = documents.protocol(metric, pass_)
        rows.append(
            {
                "protocol_digest": digest(protocol["spec"]),
                "name": protocol["name"],
                "title": protocol["title"],
                "metric": metric,
                "pass": pass_,
                "spec": canonical_json(protocol["spec"]),
            }
        )
    return pl.DataFrame(rows, schema=schemas.PROTOCOLS)


def snapshots(metas: list[SnapshotMeta], latest: set[str]) -> pl.DataFrame:
    rows = [
        {
            "snapshot_id": m.snapshot_id,
            "source": m.source,
            "source_file": m.source_file,
            "commit": m.commit,
            "committed_at": datetime.fromisoformat(m.committed_at) if m.committed_at else None,
            "subject": m.subject,
            "sequence": m.sequence,
            "content_sha256": m.content_sha256,
            "status": m.status,
            "reason": m.reason,
            "header": json.dumps(m.header),
            "row_count": m.row_count,
            "accepted": m.accepted,
            "quarantined": m.quarantined,
            "is_latest": m.snapshot_id in latest,
        }
        for m in snapshot_order(metas)
    ]
    return pl.DataFrame(rows, schema=schemas.SNAPSHOTS)
