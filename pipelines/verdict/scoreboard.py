"""A contender's own scoreboard: each implementation against the baseline provider of the same run.

Useful with no history at all: within one file, on one GPU, every implementation of a kernel ran the same
workloads as its baseline provider (torch or huggingface, `LIGER_BASELINES`), so `ratio` = the baseline
provider's value / the implementation's (above 1: faster or leaner than the baseline provider), over the
workloads both ran, as a geometric mean per kernel, pass, metric, GPU and implementation.
"""

from __future__ import annotations

import math

import polars as pl

from pipelines.core.settings import DEFAULT_BASELINES

KEY = ["kernel", "pass", "metric", "gpu_name"]
SCHEMA = pl.Schema(
    {
        **{k: pl.String for k in KEY},
        "provider": pl.String,
        "backend": pl.String,
        "baseline_provider": pl.String,
        "workloads": pl.Int64,
        "geomean_ratio": pl.Float64,
        "lowest_ratio": pl.Float64,
        "highest_ratio": pl.Float64,
    }
)


def scoreboard(runs: pl.DataFrame, baselines: tuple[str, ...] = DEFAULT_BASELINES) -> pl.DataFrame:
    """SCHEMA, one row per implementation (provider, backend) that is no baseline provider, per KEY: its runs
    paired with the baseline provider's of the same group (workload) in `runs` (a contender's passed runs).
    A kernel's baseline provider is the first of `baselines` it has runs of; a kernel with none is left out."""
    usable = runs.filter(pl.col("value") > 0)
    present = usable.filter(pl.col("provider").is_in(list(baselines))).select(*KEY, "provider").unique()
    if present.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    rank = pl.col("provider").replace_strict({p: i for i, p in enumerate(baselines)}, return_dtype=pl.Int32)
    chosen = present.sort(rank).group_by(KEY, maintain_order=True).first().rename({"provider": "baseline_provider"})
    reference = (
        usable.join(chosen, on=KEY)
        .filter(pl.col("provider") == pl.col("baseline_provider"))
        .group_by("group_id", "baseline_provider")
        .agg(pl.col("value").median().alias("baseline_value"))
    )
    paired = (
        usable.filter(~pl.col("provider").is_in(list(baselines)))
        .join(reference, on="group_id")
        .with_columns((pl.col("baseline_value") / pl.col("value")).log().alias("_log"))
    )
    board = paired.group_by(*KEY, "provider", "backend", "baseline_provider").agg(
        pl.col("group_id").n_unique().alias("workloads"),
        pl.col("_log").mean().exp().alias("geomean_ratio"),
        pl.col("_log").min().exp().alias("lowest_ratio"),
        pl.col("_log").max().exp().alias("highest_ratio"),
    )
    return board.select(SCHEMA.names()).cast(SCHEMA).sort(*KEY, "provider", "backend")


def described(ratio: float | None) -> str:
    """`1.43x faster`, `1.25x slower`, `even` (within 1%): how an implementation stands against its baseline."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return ""
    if abs(math.log(ratio)) < math.log(1.01):
        return "even"
    return f"{ratio:.2f}x faster" if ratio > 1 else f"{1 / ratio:.2f}x slower"
