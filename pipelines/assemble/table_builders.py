"""The tables built from the sorted runs (measurements) and from what the runs and snapshots name
(environments, protocols, snapshots)."""

from __future__ import annotations

import json
from datetime import datetime

import polars as pl

from pipelines.assemble.snapshot_history import History
from pipelines.core import catalog, documents, schemas
from pipelines.core.canonical import canonical_json, digest
from pipelines.ingest.normalize import UNIT_CONVERSIONS


def measurements(runs: pl.DataFrame) -> pl.DataFrame:
    """p20, p50 and p80 of every passed run; sorted by (run_id, statistic) when `runs` are sorted by run_id."""
    metric_names = {m: cm for (m, _), (cm, _, _) in UNIT_CONVERSIONS.items()}
    # The columns measurements need, before the filter copies what it keeps.
    columns = ["run_id", "metric", "unit", "raw_unit", "p20", "value", "p80", "raw_p20", "raw_p50", "raw_p80"]
    passed = runs.select(columns).filter(runs["status"] == "passed")
    n = passed.height
    # Three rows per run, next to each other: row i is run i // 3's statistic i % 3.
    index = pl.int_range(0, 3 * n, dtype=pl.Int64, eager=True)
    run_of_row, statistic = index // 3, index % 3
    interleaved = statistic * n + run_of_row
    stacked = {
        name: pl.concat([passed[c] for c in columns]).gather(interleaved)
        for name, columns in (("value", ("p20", "value", "p80")), ("raw_value", ("raw_p20", "raw_p50", "raw_p80")))
    }
    return (
        passed.select("run_id", pl.col("metric").replace(metric_names), "unit", "raw_unit")[run_of_row]
        .with_columns(
            pl.Series("statistic", ["p20", "p50", "p80"]).gather(statistic).alias("statistic"),
            stacked["value"].alias("value"),
            stacked["raw_value"].alias("raw_value"),
        )
        .filter(pl.col("value").is_not_null())
        .select(schemas.MEASUREMENTS.names())
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


def snapshots(history: History, conflicts: dict[str, int] | None = None) -> pl.DataFrame:
    """One row per staged snapshot; `conflicts` (per snapshot, its rows that conflict with their run) move from
    accepted to quarantined: staging accepted them, the assembly found them no row of a run."""
    conflicts = conflicts or {}
    rows = [
        {
            "snapshot_id": m.snapshot_id,
            "source": m.source,
            "source_file": m.source_file,
            "commit": m.commit,
            "committed_at": datetime.fromisoformat(m.committed_at) if m.committed_at else None,
            "subject": m.subject,
            "sequence": history.sequence(m),
            "content_sha256": m.content_sha256,
            "status": m.status,
            "reason": m.reason,
            "header": json.dumps(m.header),
            "row_count": m.row_count,
            "accepted": m.accepted - conflicts.get(m.snapshot_id, 0),
            "quarantined": m.quarantined + conflicts.get(m.snapshot_id, 0),
            "is_latest": m.snapshot_id in history.latest,
            "bom": m.bom,
            "line_end": m.line_end,
            "final_newline": m.final_newline,
            "layout": json.dumps(m.layout) if m.layout else None,
            "stream": m.stream,
            "benchmarked_commit": m.benchmarked_commit,
            "release": m.release,
            "on_branch": history.on_branch(m),
            **dict(zip(("main_commit", "main_position", "main_committed_at"), history.main_place(m), strict=True)),
        }
        for m in history.ordered
    ]
    return pl.DataFrame(rows, schema=schemas.SNAPSHOTS)
