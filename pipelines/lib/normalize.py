"""Records of one snapshot -> run rows and quarantine rows (SPEC sections 2 and 5).

Row-wise work is polars expressions; work that depends only on a distinct
value (config text, GPU, protocol, implementation, group) runs once per
value and is kept in a `DistinctCache` shared by every chunk and snapshot.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from pipelines.lib import catalog, documents
from pipelines.lib.canonical import NAME_MAX_CHARS, benchmark_name, canonical_json, digest
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


KNOWN_ROW = "_known_row"


class Lookup:
    """Answers per distinct key tuple, computed once each and kept as a frame that chunks join on.

    `compute` gets the frame of keys not seen before and returns it with the answer
    columns; the work is per distinct value however many rows share it. A tracked lookup
    also remembers which of its answers were asked for since `used` was last cleared.
    """

    def __init__(
        self, keys: list[str], schema: dict[str, pl.DataType], compute: Callable[[pl.DataFrame], pl.DataFrame], track: bool = False
    ):
        self.keys = keys
        self.compute = compute
        self.known = pl.DataFrame(schema={**{k: pl.String for k in keys}, **schema})
        self.track = track
        self.used: set[int] = set()

    def attach(self, frame: pl.DataFrame) -> pl.DataFrame:
        # Joined first and computed only for the keys that found no answer: once the cache knows a
        # snapshot's values, a chunk's keys are hashed once, by the join, not also to find the new ones.
        joined = self._join(frame)
        new = joined.filter(pl.col(KNOWN_ROW).is_null()).select(self.keys).unique()
        if new.height:
            # Copied out as Python values: polars' string views would otherwise keep every chunk's
            # whole text buffers alive for as long as the cache, so memory would grow with the rows.
            new = pl.DataFrame(new.to_dict(as_series=False), schema=new.schema)
            self.known = pl.concat([self.known, self.compute(new).select(self.known.columns)], rechunk=True)
            joined = self._join(frame)
        if self.track:
            self.used.update(joined[KNOWN_ROW].unique().to_list())
        return joined.drop(KNOWN_ROW)

    def _join(self, frame: pl.DataFrame) -> pl.DataFrame:
        known = self.known.with_row_index(KNOWN_ROW)
        return frame.join(known, on=self.keys, how="left", nulls_equal=True, maintain_order="left")

    def used_answers(self) -> pl.DataFrame:
        """The keys and answers asked for since `used` was cleared."""
        return self.known.with_row_index(KNOWN_ROW).filter(pl.col(KNOWN_ROW).is_in(sorted(self.used))).drop(KNOWN_ROW)

    def seed(self, answers: pl.DataFrame) -> None:
        """Take answers computed before (by `compute`, so the same), as `used_answers` gave them."""
        self.known = pl.concat([self.known, answers.select(self.known.columns)]).unique(self.keys, keep="first", maintain_order=True)


def per_key(function: Callable[..., tuple | str], names: list[str]) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """A Lookup compute that calls `function(*key)` for each new key and spreads its answer over `names`."""

    def compute(keys: pl.DataFrame) -> pl.DataFrame:
        answers = [answer if isinstance(answer, tuple) else (answer,) for answer in (function(*k) for k in keys.iter_rows())]
        return keys.hstack(pl.DataFrame(answers, schema={n: pl.String for n in names}, orient="row"))

    return compute


WORKLOAD_FIELDS = ("workload", "workload_slug", "workload_digest", "x_key", "sweep_workload", "sweep_digest", "_config_error")
BENCHMARK_FIELDS = ("benchmark", "kernel_title", "title", "protocol_digest", "_kernel_json")


def _with_slug(compute: Callable[[pl.DataFrame], pl.DataFrame], column: str, text: pl.Expr) -> Callable[[pl.DataFrame], pl.DataFrame]:
    # Slugs are taken with polars' own lowercasing, the one every row got before.
    return lambda keys: compute(keys).with_columns(_slug_expr(text).alias(column))


@dataclass
class DistinctCache:
    """Answers per distinct value (config, GPU, benchmark, implementation), shared by every chunk and snapshot.

    Each grows with the distinct values seen, never with the rows.
    """

    workloads: Lookup = field(
        default_factory=lambda: Lookup(
            ["extra_benchmark_config_str", "x_name", "x_value"],
            {n: pl.String for n in (*WORKLOAD_FIELDS, "_workload_name")},
            _with_slug(per_key(lambda c, n, v: workload_fields(c, n, v), list(WORKLOAD_FIELDS)), "_workload_name", pl.col("workload_slug")),
            track=True,
        )
    )
    environments: Lookup = field(
        default_factory=lambda: Lookup(
            ["gpu_name"],
            {"environment_digest": pl.String, "_gpu_slug": pl.String},
            _with_slug(per_key(environment_digest, ["environment_digest"]), "_gpu_slug", pl.col("gpu_name")),
        )
    )
    benchmarks: Lookup = field(
        default_factory=lambda: Lookup(
            ["kernel", "provider", "pass", "metric"],
            {n: pl.String for n in (*BENCHMARK_FIELDS, "_name_prefix")},
            _with_slug(
                per_key(benchmark_fields, list(BENCHMARK_FIELDS)),
                "_name_prefix",
                pl.format("liger {} {}", "benchmark", "provider"),
            ),
        )
    )
    implementations: Lookup = field(
        default_factory=lambda: Lookup(
            ["kernel", "provider", "liger_version"],
            {"implementation_digest": pl.String},
            per_key(implementation_digest, ["implementation_digest"]),
        )
    )


@dataclass(frozen=True)
class Normalized:
    rows: pl.DataFrame  # schema RUN_ROWS
    quarantine: pl.DataFrame  # schema QUARANTINE


def workload_fields(config: str, x_name: str, x_value: str) -> tuple[str | None, ...]:
    try:
        workload = build_workload(config, x_name, x_value)
    except ConfigError as exc:
        return (None,) * 6 + (str(exc),)
    x_key = canonical_key(x_name)
    sweep = {k: v for k, v in workload.params.items() if k != x_key}
    return (workload.canonical, workload.slug, workload.digest, x_key, canonical_json(sweep), digest(sweep), None)


def benchmark_fields(kernel: str, provider: str, pass_: str, metric: str) -> tuple[str, ...]:
    kernel_title = catalog.kernel_title(kernel)
    title = f"{kernel_title} · {provider} · {pass_}" + (" · peak memory" if metric == "memory" else "")
    kernel_json = canonical_json(kernel)
    return (benchmark_name(kernel, pass_, metric), kernel_title, title, protocol_digest(metric, pass_), kernel_json)


def environment_digest(gpu_name: str) -> str:
    return digest(documents.environment(catalog.gpu(gpu_name))["spec"])


def protocol_digest(metric: str, pass_: str) -> str:
    return digest(documents.protocol(metric, pass_)["spec"])


def implementation_digest(kernel: str, provider: str, liger_version: str | None) -> str:
    return digest({"kernel": kernel, "provider": provider, "ligerVersion": liger_version})


def _group_json() -> pl.Expr:
    """The canonical JSON that `group_id` hashes, built per row: keys in sorted order, the digests
    bare hex (nothing to escape) and the kernel already canonical JSON."""
    return pl.concat_str(
        pl.lit('{"environmentDigest":"'),
        pl.col("environment_digest"),
        pl.lit('","kernel":'),
        pl.col("_kernel_json"),
        pl.lit(',"protocolDigest":"'),
        pl.col("protocol_digest"),
        pl.lit('","workloadDigest":"'),
        pl.col("workload_digest"),
        pl.lit('"}'),
    )


def sha256_hex(texts: pl.Series) -> pl.Series:
    """The sha256 of each text, hashed once per distinct text."""
    distinct = texts.unique()
    hashes = [hashlib.sha256(text.encode()).hexdigest() for text in distinct.to_list()]
    return texts.replace_strict(distinct, pl.Series(hashes, dtype=pl.String), return_dtype=pl.String)


def _slug_expr(expr: pl.Expr) -> pl.Expr:
    return expr.str.to_lowercase().str.replace_all(r"[^a-z0-9]+", "-").str.strip_chars("-")


def _y_text(q: str) -> str:
    """The column of a y field's text without surrounding whitespace, stripped once for every use."""
    return f"_y_text_{q}"


def _y_missing(q: str) -> str:
    return f"_y_missing_{q}"


def _with_y_numbers(frame: pl.DataFrame) -> pl.DataFrame:
    """`raw_p{q}` for each y field, and whether it is missing (`_y_missing(q)`), which the problems ask again."""
    frame = frame.with_columns(pl.col(c).str.strip_chars().alias(_y_text(q)) for q, c in Y_COLUMNS.items())
    frame = frame.with_columns(
        (pl.col(_y_text(q)).is_null() | pl.col(_y_text(q)).str.to_lowercase().is_in(MISSING_Y)).alias(_y_missing(q)) for q in Y_COLUMNS
    )
    return frame.with_columns(
        pl.when(_y_missing(q)).then(None).otherwise(pl.col(_y_text(q)).cast(pl.Float64, strict=False)).alias(f"raw_p{q}") for q in Y_COLUMNS
    )


def _blank(column: str) -> pl.Expr:
    return pl.col(column).is_null() | (pl.col(column).str.strip_chars() == "")


def _problems() -> list[tuple[pl.Expr, pl.Expr]]:
    """(whether a row has it, what the reason says) for each way a row fails; the y columns are parsed already."""
    empty = pl.concat_str([pl.when(_blank(c)).then(pl.lit(c)) for c in REQUIRED_VALUES], separator=", ", ignore_nulls=True)
    bad_time = (
        pl.col("timestamp").is_not_null()
        & (pl.col("timestamp") != "")
        & (~pl.col("timestamp").str.contains(TIMESTAMP_PATTERN) | pl.col("_observed_at").is_null())
    )
    problems = [
        (pl.any_horizontal([_blank(c) for c in REQUIRED_VALUES]), pl.format("required field(s) empty: {}", empty)),
        (bad_time, pl.format("timestamp {} is not in the form YYYY-MM-DD HH:MM:SS", pl.col("timestamp").str.slice(0, 40))),
        *[
            (
                ~pl.col(_y_missing(q)) & (pl.col(f"raw_p{q}").is_null() | pl.col(f"raw_p{q}").is_infinite()),
                pl.format("{} {} is neither a number nor missing", pl.lit(c), pl.col(c).str.slice(0, 80)),
            )
            for q, c in Y_COLUMNS.items()
        ],
        (pl.col("_config_error").is_not_null(), pl.col("_config_error")),
    ]
    return [(condition.fill_null(False), text) for condition, text in problems]


def _is_bad() -> pl.Expr:
    # Cheap booleans for every row; the reason texts are built only for the rows that fail.
    return pl.any_horizontal(pl.col(PARSE_ERROR).is_not_null(), *[condition for condition, _ in _problems()]).alias("_bad")


def _reasons() -> pl.Expr:
    reason = pl.concat_str([pl.when(condition).then(text) for condition, text in _problems()], separator="; ", ignore_nulls=True)
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
    frame = cache.workloads.attach(frame.with_columns(pl.col("extra_benchmark_config_str", "x_name", "x_value").fill_null("")))
    frame = _with_y_numbers(frame)
    frame = frame.with_columns(_is_bad())

    bad = frame.filter(pl.col("_bad")).with_columns(_reasons())
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


def describe(runs: pl.DataFrame, cache: DistinctCache, sources: pl.DataFrame) -> pl.DataFrame:
    """Run rows (RUN_ROWS and more) with the columns of RUNS that staging leaves out: those that depend only
    on a distinct value (config, GPU, benchmark, implementation, group, snapshot), joined back once the
    rows are down to their runs, so they are never written, read back and sorted with every staged row.

    `sources` holds the source and source_file of each snapshot_id."""
    frame = cache.workloads.attach(runs.rename({"raw_config": "extra_benchmark_config_str"}))
    frame = frame.rename({"extra_benchmark_config_str": "raw_config"})
    frame = cache.environments.attach(frame)
    frame = cache.benchmarks.attach(frame)
    frame = cache.implementations.attach(frame)
    frame = frame.join(sources, on="snapshot_id", how="left", maintain_order="left")
    return frame.with_columns(
        sha256_hex(frame.select(_group_json()).to_series()).alias("group_id"),
        # slug("liger {benchmark} {provider} {gpu} {workload slug}") is the slugs of its parts joined by
        # `-` (a separator run becomes one `-`, and slugs have none at their ends), empty parts left out.
        pl.concat_str(
            "_name_prefix",
            *[pl.when(pl.col(c) != "").then(pl.col(c)) for c in ("_gpu_slug", "_workload_name")],
            separator="-",
            ignore_nulls=True,
        )
        .str.slice(0, NAME_MAX_CHARS)
        .str.strip_chars_end("-")
        .alias("name"),
    )
