"""Each series' noise (SPEC section 8), from the statistic `series_noise`; a series too short to tell borrows its
kernel's."""

from __future__ import annotations

import polars as pl

from pipelines.core import sql_files
from pipelines.statistics.db import Session

KERNEL_KEY = ["kernel", "pass", "metric", "gpu_name", "backend"]
SCHEMA = pl.Schema(
    {
        "group_id": pl.String,
        "provider": pl.String,
        "backend": pl.String,
        "kernel": pl.String,
        "pass": pl.String,
        "metric": pl.String,
        "gpu_name": pl.String,
        "n_points": pl.Int64,
        "n_pairs": pl.Int64,
        "noise": pl.Float64,
        "method": pl.String,
    }
)


def series_noise(session: Session) -> pl.DataFrame:
    """The noise of every series of the contender's kernels (the registered `contender_series`) on their
    GPUs: SCHEMA, one row per (group_id, provider, backend); `noise` is the standard deviation of ln(value)
    of one run (0.05 is about 5%), never null: a series without an estimate of its own takes the median of
    its kernel's series on that GPU and backend (`method` `pooled`), else null rows are dropped."""
    result = session.query(sql_files.text("verdict/series_noise"))
    return pooled(pl.DataFrame(result.rows, schema=SCHEMA, orient="row"))


def pooled(own: pl.DataFrame) -> pl.DataFrame:
    """SCHEMA rows with a noise of their own or their kernel's (the median over its series on that GPU and backend,
    `method` `pooled`); rows with neither are dropped."""
    known = own.filter(pl.col("noise").is_not_null() & pl.col("noise").is_finite())
    typical = known.group_by(KERNEL_KEY).agg(pl.col("noise").median().alias("kernel_noise"))
    filled = own.join(typical, on=KERNEL_KEY, how="left", nulls_equal=True).with_columns(
        pl.when(pl.col("noise").is_null() | ~pl.col("noise").is_finite())
        .then(pl.lit("pooled"))
        .otherwise(pl.col("method"))
        .alias("method"),
        pl.when(pl.col("noise").is_null() | ~pl.col("noise").is_finite())
        .then(pl.col("kernel_noise"))
        .otherwise(pl.col("noise"))
        .alias("noise"),
    )
    return filled.filter(pl.col("noise").is_not_null()).select(SCHEMA.names())


# A series of fewer points (reruns as one) than this says too little: its noise is unknown, whatever the pools
# say (a young series of upstream's CI moves by tens of percent from host to host, far more than its pool's
# noise). A long series whose current segment is short keeps its own noise.
MIN_LEVEL_POINTS = 3


def with_window(levels: pl.DataFrame, noise: pl.DataFrame) -> pl.DataFrame:
    """The baselines the judge takes: each series' level (pipelines/verdict/level.py) with its noise of one run,
    the series' noise (SCHEMA's `noise`, `method`) but never below the window spread of its current segment
    (`window_noise`: a host that flips between two modes, which consecutive differences miss; method
    `window`); a series with neither, or whose series has fewer than MIN_LEVEL_POINTS points (method `short`),
    has a null noise (the judge says `inconclusive`, noise unknown)."""
    joined = levels.join(
        noise.select("group_id", "provider", "backend", "noise", "method"), on=["group_id", "provider", "backend"], how="left"
    )
    window_wins = pl.col("window_noise").is_not_null() & (pl.col("noise").is_null() | (pl.col("window_noise") > pl.col("noise")))
    short = pl.col("series_points") < MIN_LEVEL_POINTS
    return joined.with_columns(
        pl.when(short).then(None).when(window_wins).then(pl.col("window_noise")).otherwise(pl.col("noise")).alias("noise"),
        pl.when(short)
        .then(pl.lit("short"))
        .when(window_wins)
        .then(pl.lit("window"))
        .otherwise(pl.col("method"))
        .fill_null("none")
        .alias("noise_method"),
    ).drop("method")
