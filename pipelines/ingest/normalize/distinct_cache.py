"""Work that depends only on a distinct value runs once per value: `Lookup` keeps the answers as a frame
that chunks join on, and `DistinctCache` holds one per kind of value, shared by every chunk and snapshot."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from pipelines.core import workload
from pipelines.ingest.normalize.rules import (
    BENCHMARK_FIELDS,
    WORKLOAD_FIELDS,
    benchmark_fields,
    environment_digest,
    implementation_digest,
    workload_fields,
)

KNOWN_ROW = "_known_row"
# The `name=value` a kernel name carries (pipelines.core.workload.split_kernel), "" for none: part of the workload.
KERNEL_PARAMETER = "_kernel_parameter"


def split_kernel_names(frame: pl.DataFrame, raw: str) -> pl.DataFrame:
    """`frame` with the kernel of its kernel names in `kernel` and their parameter in KERNEL_PARAMETER
    (pipelines.core.workload.split_kernel, as polars expressions)."""
    # Split once per distinct name (a file names a few dozen kernels) and mapped back to the rows: the regular
    # expression over every row cost more than the rest of the mapping.
    names = frame.get_column(raw).drop_nulls().unique()
    parts = pl.col(raw).str.extract_groups(workload.KERNEL_PARAMETER)
    split = names.to_frame(raw).select(
        pl.coalesce(parts.struct.field("1"), pl.col(raw)).alias("kernel"),
        pl.when(parts.struct.field("1").is_not_null())
        .then(pl.format("{}={}", parts.struct.field("2"), parts.struct.field("3")))
        .otherwise(pl.lit(""))
        .alias(KERNEL_PARAMETER),
    )
    # A missing name is no kernel, with no parameter ("").
    return frame.with_columns(
        pl.col(raw).replace_strict(names, split["kernel"], return_dtype=pl.String).alias("kernel"),
        pl.col(raw).replace_strict(names, split[KERNEL_PARAMETER], return_dtype=pl.String).fill_null("").alias(KERNEL_PARAMETER),
    )


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
        # Only the keys are joined, to the row of `known` that answers them, and the answers gathered from those
        # rows: a join of the whole frame copied every one of its columns (describe's four lookups copied each bucket
        # four times). Computed only for the keys that found no answer: once the cache knows a snapshot's values,
        # a chunk's keys are hashed once, by the join, not also to find the new ones.
        keys = frame.select(self.keys)
        rows = self._rows(keys, self.known)
        unanswered = rows.is_null()
        if unanswered.any():
            new = keys.filter(unanswered).unique()
            # Copied out as Python values: polars' string views would otherwise keep every chunk's
            # whole text buffers alive for as long as the cache, so memory would grow with the rows.
            new = pl.DataFrame(new.to_dict(as_series=False), schema=new.schema)
            added = self.compute(new).select(self.known.columns)
            offset = self.known.height
            self.known = pl.concat([self.known, added], rechunk=True)
            positions = unanswered.arg_true()
            rows = rows.scatter(positions, self._rows(keys[positions], added) + offset)
        if self.track:
            self.used.update(rows.unique().drop_nulls().to_list())
        return frame.hstack(self.known.drop(self.keys).gather(rows).get_columns())

    def _rows(self, keys: pl.DataFrame, known: pl.DataFrame) -> pl.Series:
        """The row of `known` that answers each row of `keys`, null where none does."""
        indexed = known.select(self.keys).with_row_index(KNOWN_ROW)
        return keys.join(indexed, on=self.keys, how="left", nulls_equal=True, maintain_order="left")[KNOWN_ROW]

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


def _with_slug(compute: Callable[[pl.DataFrame], pl.DataFrame], column: str, text: pl.Expr) -> Callable[[pl.DataFrame], pl.DataFrame]:
    # Slugs are taken with polars' own lowercasing, the one every row got before.
    return lambda keys: compute(keys).with_columns(_slug_expr(text).alias(column))


def _slug_expr(expr: pl.Expr) -> pl.Expr:
    return expr.str.to_lowercase().str.replace_all(r"[^a-z0-9]+", "-").str.strip_chars("-")


@dataclass
class DistinctCache:
    """Answers per distinct value (config, GPU, benchmark, implementation), shared by every chunk and snapshot.

    Each grows with the distinct values seen, never with the rows.
    """

    workloads: Lookup = field(
        default_factory=lambda: Lookup(
            ["extra_benchmark_config_str", "x_name", "x_value", KERNEL_PARAMETER],
            {n: pl.String for n in (*WORKLOAD_FIELDS, "_workload_name")},
            _with_slug(per_key(workload_fields, list(WORKLOAD_FIELDS)), "_workload_name", pl.col("workload_slug")),
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
