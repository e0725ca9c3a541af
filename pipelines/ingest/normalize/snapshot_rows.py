"""Records of one snapshot -> run rows and quarantine rows (SPEC sections 2 and 5).

Row-wise work is polars expressions; work that depends only on a distinct
value (config text, GPU, protocol, implementation, group) runs once per
value and is kept in a `DistinctCache` shared by every chunk and snapshot.

The rules live in `rules`, the cache in `distinct_cache`, the reasons
for quarantine in `quarantine`; `describe` joins the
per-value columns back once the rows are down to their runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipelines.core.schemas import AS_WRITTEN, LIGER_COLUMNS, QUARANTINE, RUN_ROWS
from pipelines.ingest.normalize.distinct_cache import DistinctCache, split_kernel_names
from pipelines.ingest.normalize.quarantine import is_bad, raw_line, reasons, with_y_numbers
from pipelines.ingest.normalize.rules import TIMESTAMP_FORMAT, UNIT_CONVERSIONS
from pipelines.ingest.parse.header import RAW_TEXT, ROW_NUMBER, Header


@dataclass(frozen=True)
class Normalized:
    rows: pl.DataFrame  # schema RUN_ROWS
    quarantine: pl.DataFrame  # schema QUARANTINE


def normalize(
    records: pl.DataFrame,
    header: Header,
    *,
    snapshot_id: str,
    cache: DistinctCache,
) -> Normalized:
    frame = records.with_columns([pl.lit(None, pl.String).alias(c) for c in LIGER_COLUMNS if c not in header.columns])
    extra = [c for c in header.columns if c not in LIGER_COLUMNS]
    frame = frame.with_columns(
        (pl.struct(extra).struct.json_encode() if extra else pl.lit(None, pl.String)).alias("extra_columns"),
        pl.col("timestamp")
        .str.strptime(pl.Datetime("us"), TIMESTAMP_FORMAT, strict=False)
        .dt.replace_time_zone("UTC")
        .alias("_observed_at"),
    )
    frame = split_kernel_names(frame, "kernel_name")
    frame = cache.workloads.attach(frame.with_columns(pl.col("extra_benchmark_config_str", "x_name", "x_value").fill_null("")))
    frame = with_y_numbers(frame)
    frame = frame.with_columns(is_bad())

    bad = frame.filter(pl.col("_bad")).with_columns(reasons())
    quarantine = pl.DataFrame(
        {
            "snapshot_id": [snapshot_id] * bad.height,
            "row_number": bad[ROW_NUMBER],
            "raw": [raw_line(fields, raw) for fields, raw in zip(bad.select(header.columns).iter_rows(), bad[RAW_TEXT])],
            "reason": bad["_reason"],
        },
        schema=QUARANTINE,
    )
    good = frame.filter(~pl.col("_bad"))
    return Normalized(rows=_run_rows(good, snapshot_id, cache), quarantine=quarantine)


def _run_rows(good: pl.DataFrame, snapshot_id: str, cache: DistinctCache) -> pl.DataFrame:
    good = good.rename({column: kept for column, kept in AS_WRITTEN.items() if column != kept} | {"_observed_at": "observed_at"})
    # Only what the run id needs of the per-value answers: the rest is joined back by `describe`.
    good = cache.environments.attach(good)
    good = cache.benchmarks.attach(good)
    factor, unit = pl.when(False).then(None), pl.when(False).then(None)
    for (metric, raw_unit), (_, canonical_unit, scale) in UNIT_CONVERSIONS.items():
        known = (pl.col("metric") == metric) & (pl.col("raw_unit") == raw_unit)
        factor, unit = factor.when(known).then(pl.lit(scale)), unit.when(known).then(pl.lit(canonical_unit))

    def canonical(q: str) -> pl.Expr:
        raw = pl.col(f"raw_p{q}")
        return pl.when(pl.col("_factor").is_null()).then(raw).otherwise((raw * pl.col("_factor")).round(0))

    good = good.with_columns(factor.otherwise(pl.lit(None, pl.Float64)).alias("_factor"), unit.otherwise(pl.col("raw_unit")).alias("unit"))
    # An accepted row's timestamp matches TIMESTAMP_PATTERN; in 19 bytes its digits are ASCII, so its only
    # other characters are `-`, ` ` and `:`, one at a time: what the slug's regex would turn into `-`.
    stamp = pl.col("raw_timestamp")
    if good["raw_timestamp"].str.len_bytes().eq(19).all():
        stamp_slug = stamp.str.replace_many([" ", ":"], ["-", "-"])
    else:
        stamp_slug = stamp.str.replace_all(r"[^0-9]+", "-")
    good = good.with_columns(
        pl.when(pl.col("raw_p50").is_null()).then(pl.lit("failed")).otherwise(pl.lit("passed")).alias("status"),
        canonical("50").alias("value"),
        canonical("20").alias("p20"),
        canonical("80").alias("p80"),
        pl.lit(snapshot_id).alias("snapshot_id"),
        pl.format(
            "{}/{}/{}/{}/{}",
            "benchmark",
            "provider",
            "_gpu_slug",
            "workload_slug",
            stamp_slug,
        ).alias("run_id"),
    )
    return good.select(RUN_ROWS.names()).cast(RUN_ROWS)
