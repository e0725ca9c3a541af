"""Records of one snapshot -> run rows and quarantine rows (SPEC sections 2 and 5).

Row-wise work is polars expressions; work that depends only on a distinct
value (config text, GPU, protocol, implementation, group) runs once per
value and is kept in a `DistinctCache` shared by every chunk and snapshot.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import polars as pl

from pipelines.lib import catalog, documents
from pipelines.lib.canonical import NAME_MAX_CHARS, canonical_json, digest
from pipelines.lib.parse import PARSE_ERROR, RAW_TEXT, ROW_NUMBER, Header
from pipelines.lib.schemas import LIGER_COLUMNS, QUARANTINE, REQUIRED_VALUES, RUN_ROWS
from pipelines.lib.workload import ConfigError, build_workload, canonical_key

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"
MISSING_Y = ("", "nan", "-nan", "+nan")
Y_COLUMNS = {"50": "y_value_50", "20": "y_value_20", "80": "y_value_80"}

# (metric, unit as upstream writes it) -> (canonical metric, canonical unit, factor)
UNIT_CONVERSIONS = {
    ("speed", "ms"): ("latency", "ns", 1e6),
    ("memory", "MB"): ("peak_memory", "bytes", float(2**20)),
}


@dataclass
class DistinctCache:
    """Answers per distinct value, shared across chunks and snapshots."""

    workloads: dict[tuple[str, str, str], tuple[str | None, ...]] = field(default_factory=dict)
    environments: dict[str, str] = field(default_factory=dict)
    protocols: dict[tuple[str, str], str] = field(default_factory=dict)
    implementations: dict[tuple[str, str, str], str] = field(default_factory=dict)
    groups: dict[tuple[str, str, str, str], str] = field(default_factory=dict)


@dataclass(frozen=True)
class Normalized:
    rows: pl.DataFrame  # schema RUN_ROWS
    quarantine: pl.DataFrame  # schema QUARANTINE


WORKLOAD_FIELDS = ("workload", "workload_slug", "workload_digest", "x_key", "sweep_workload", "sweep_digest", "_config_error")


def workload_fields(config: str, x_name: str, x_value: str) -> tuple[str | None, ...]:
    try:
        workload = build_workload(config, x_name, x_value)
    except ConfigError as exc:
        return (None,) * 6 + (str(exc),)
    x_key = canonical_key(x_name)
    sweep = {k: v for k, v in workload.params.items() if k != x_key}
    return (workload.canonical, workload.slug, workload.digest, x_key, canonical_json(sweep), digest(sweep), None)


def environment_digest(gpu_name: str) -> str:
    return digest(documents.environment(catalog.gpu(gpu_name))["spec"])


def protocol_digest(metric: str, pass_: str) -> str:
    return digest(documents.protocol(metric, pass_)["spec"])


def implementation_digest(kernel: str, provider: str, liger_version: str | None) -> str:
    return digest({"kernel": kernel, "provider": provider, "ligerVersion": liger_version})


def group_id(kernel: str, workload_digest: str, protocol_digest_: str, environment_digest_: str) -> str:
    return digest(
        {
            "kernel": kernel,
            "workloadDigest": workload_digest,
            "protocolDigest": protocol_digest_,
            "environmentDigest": environment_digest_,
        }
    )


def _lookup(frame: pl.DataFrame, keys: list[str], cache: dict, compute, names: list[str]) -> pl.DataFrame:
    """Join `names` onto `frame`, computing each distinct `keys` tuple once (and caching it)."""
    distinct = frame.select(keys).unique()
    values = []
    for key in distinct.iter_rows():
        if key not in cache:
            cache[key] = compute(*key)
        answer = cache[key]
        values.append(answer if isinstance(answer, tuple) else (answer,))
    looked_up = distinct.hstack(pl.DataFrame(values, schema={n: pl.String for n in names}, orient="row"))
    return frame.join(looked_up, on=keys, how="left", nulls_equal=True)


def _slug_expr(expr: pl.Expr) -> pl.Expr:
    return expr.str.to_lowercase().str.replace_all(r"[^a-z0-9]+", "-").str.strip_chars("-")


def _y_text(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars()


def _y_missing(column: str) -> pl.Expr:
    text = _y_text(column)
    return text.is_null() | text.str.to_lowercase().is_in(MISSING_Y)


def _y_number(column: str) -> pl.Expr:
    return pl.when(_y_missing(column)).then(None).otherwise(_y_text(column).cast(pl.Float64, strict=False))


def _reasons() -> pl.Expr:
    required = [
        pl.when(pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "")).then(pl.lit(c)) for c in REQUIRED_VALUES
    ]
    empty = pl.concat_str(required, separator=", ", ignore_nulls=True)
    bad_time = pl.col("timestamp").is_not_null() & (pl.col("timestamp") != "") & (
        ~pl.col("timestamp").str.contains(TIMESTAMP_PATTERN) | pl.col("_observed_at").is_null()
    )
    y_reasons = [
        pl.when(~_y_missing(c) & (_y_number(c).is_null() | _y_number(c).is_infinite())).then(
            pl.format("{} {} is neither a number nor missing", pl.lit(c), pl.col(c).str.slice(0, 80))
        )
        for c in Y_COLUMNS.values()
    ]
    parts = [
        pl.when(empty != "").then(pl.format("required field(s) empty: {}", empty)),
        pl.when(bad_time).then(pl.format("timestamp {} is not in the form YYYY-MM-DD HH:MM:SS", pl.col("timestamp").str.slice(0, 40))),
        *y_reasons,
        pl.col("_config_error"),
    ]
    reason = pl.concat_str(parts, separator="; ", ignore_nulls=True)
    # A row that could not be split into fields has no field worth judging.
    return pl.coalesce(pl.col(PARSE_ERROR), pl.when(reason != "").then(reason)).alias("_reason")


def raw_line(fields: tuple, raw: str | None) -> str:
    if raw is not None:
        return raw
    buffer = io.StringIO()
    # csv quotes a field holding a line break only when the break is in its lineterminator.
    csv.writer(buffer, lineterminator="\r\n").writerow(["" if f is None else f for f in fields])
    return buffer.getvalue().removesuffix("\r\n")


def normalize(
    records: pl.DataFrame,
    header: Header,
    *,
    snapshot_id: str,
    source: str,
    source_file: str,
    cache: DistinctCache,
) -> Normalized:
    frame = records.with_columns(
        [pl.lit(None, pl.String).alias(c) for c in LIGER_COLUMNS if c not in header.columns]
    )
    extra = [c for c in header.columns if c not in LIGER_COLUMNS]
    frame = frame.with_columns(
        (pl.struct(extra).struct.json_encode() if extra else pl.lit(None, pl.String)).alias("extra_columns"),
        pl.col("timestamp")
        .str.strptime(pl.Datetime("us"), TIMESTAMP_FORMAT, strict=False)
        .dt.replace_time_zone("UTC")
        .alias("_observed_at"),
    )
    frame = _lookup(
        frame.with_columns(pl.col("extra_benchmark_config_str", "x_name", "x_value").fill_null("")),
        ["extra_benchmark_config_str", "x_name", "x_value"],
        cache.workloads,
        workload_fields,
        list(WORKLOAD_FIELDS),
    ).with_columns(_reasons())

    bad = frame.filter(pl.col("_reason").is_not_null())
    quarantine = pl.DataFrame(
        {
            "snapshot_id": [snapshot_id] * bad.height,
            "row_number": bad[ROW_NUMBER],
            "raw": [raw_line(fields, raw) for fields, raw in zip(bad.select(header.columns).iter_rows(), bad[RAW_TEXT])],
            "reason": bad["_reason"],
        },
        schema=QUARANTINE,
    )
    good = frame.filter(pl.col("_reason").is_null())
    return Normalized(rows=_run_rows(good, snapshot_id, source, source_file, cache), quarantine=quarantine)


def _run_rows(good: pl.DataFrame, snapshot_id: str, source: str, source_file: str, cache: DistinctCache) -> pl.DataFrame:
    good = good.rename(
        {
            "kernel_name": "kernel",
            "kernel_provider": "provider",
            "kernel_operation_mode": "pass",
            "metric_name": "metric",
            "metric_unit": "raw_unit",
            "extra_benchmark_config_str": "raw_config",
            "timestamp": "raw_timestamp",
            "y_value_50": "raw_y_value_50",
            "y_value_20": "raw_y_value_20",
            "y_value_80": "raw_y_value_80",
            "_observed_at": "observed_at",
        }
    )
    good = _lookup(good, ["gpu_name"], cache.environments, environment_digest, ["environment_digest"])
    good = _lookup(good, ["metric", "pass"], cache.protocols, protocol_digest, ["protocol_digest"])
    good = _lookup(
        good, ["kernel", "provider", "liger_version"], cache.implementations, implementation_digest, ["implementation_digest"]
    )
    good = _lookup(
        good,
        ["kernel", "workload_digest", "protocol_digest", "environment_digest"],
        cache.groups,
        group_id,
        ["group_id"],
    )
    titles = {k: catalog.kernel_title(k) for k in good["kernel"].unique().to_list()}
    conversions = pl.DataFrame(
        [(m, u, cm, cu, f) for (m, u), (cm, cu, f) in UNIT_CONVERSIONS.items()],
        schema={"metric": pl.String, "raw_unit": pl.String, "_metric": pl.String, "unit": pl.String, "_factor": pl.Float64},
        orient="row",
    )
    good = good.join(conversions, on=["metric", "raw_unit"], how="left").with_columns(
        pl.col("unit").fill_null(pl.col("raw_unit")),
        *[_y_number(f"raw_y_value_{q}").alias(f"raw_p{q}") for q in Y_COLUMNS],
    )

    def canonical(q: str) -> pl.Expr:
        raw = pl.col(f"raw_p{q}")
        return pl.when(pl.col("_factor").is_null()).then(raw).otherwise((raw * pl.col("_factor")).round(0))

    benchmark = (
        pl.when(pl.col("metric") == "speed")
        .then(pl.format("{}/{}", "kernel", "pass"))
        .otherwise(pl.format("{}/{}/{}", "kernel", "pass", "metric"))
    )
    good = good.with_columns(
        benchmark.alias("benchmark"),
        pl.col("kernel").replace_strict(titles, return_dtype=pl.String).alias("kernel_title"),
        pl.when(pl.col("raw_p50").is_null()).then(pl.lit("failed")).otherwise(pl.lit("passed")).alias("status"),
        canonical("50").alias("value"),
        canonical("20").alias("p20"),
        canonical("80").alias("p80"),
        pl.lit(source).alias("source"),
        pl.lit(source_file).alias("source_file"),
        pl.lit(snapshot_id).alias("snapshot_id"),
    )
    good = good.with_columns(
        pl.format(
            "{}/{}/{}/{}/{}",
            "benchmark",
            "provider",
            _slug_expr(pl.col("gpu_name")),
            "workload_slug",
            pl.col("raw_timestamp").str.replace_all(r"[^0-9]+", "-"),
        ).alias("run_id"),
        _slug_expr(pl.format("liger {} {} {} {}", "benchmark", "provider", "gpu_name", "workload_slug"))
        .str.slice(0, NAME_MAX_CHARS)
        .str.strip_chars_end("-")
        .alias("name"),
        pl.format(
            "{} · {} · {}{}",
            "kernel_title",
            "provider",
            "pass",
            pl.when(pl.col("metric") == "memory").then(pl.lit(" · peak memory")).otherwise(pl.lit("")),
        ).alias("title"),
    )
    return good.select(RUN_ROWS.names()).cast(RUN_ROWS)

