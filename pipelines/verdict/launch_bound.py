"""Launch-bound points: timings that measure a kernel's launch and Python overhead, not its work.

Upstream's scripts sweep one input (`x`, e.g. total tokens) with everything else fixed. Along such a sweep a
kernel's time is about `fixed + per_x * x`: the fixed part is launch, Python and synchronisation overhead, the
other part the work. Where the fixed part is most of a point's time, the point says nothing about the kernel:
on an H200, liger's layer_norm, group_norm and softmax `full` take 0.2-1 ms at every size from 1,024 to 8,192
tokens while torch's times grow with the size, and such timings can double between two runs of the same code.

The shape is read from the sweep itself: `fixed` and `per_x` are the least-squares line through the sweep's
points, both kept at or above zero (a sweep whose time falls as x grows is all overhead). A point's `work_share`
is `per_x * x / (fixed + per_x * x)`, the part of its time that grows with its work; below WORK_SHARE it is
launch-bound. A sweep too short to tell (fewer than MIN_POINTS sizes, or x spanning less than MIN_SPAN times)
marks nothing, and only speed is read (a memory figure has no launch overhead).
"""

from __future__ import annotations

import polars as pl

# Less than half of the point's time grows with its work: what it measures is mostly overhead.
WORK_SHARE = 0.5
MIN_POINTS = 3
MIN_SPAN = 4.0
# One sweep: the same implementation, pass and GPU, the same workload but for the swept x.
SWEEP = ["kernel", "provider", "backend", "pass", "metric", "gpu_name", "sweep_digest", "x_name"]


def work_share(runs: pl.DataFrame) -> pl.Series:
    """Per row of `runs` (SWEEP, x_value, value, unit), the share of its time that grows with the sweep's x,
    or null where it cannot be read (not a speed, x not a number, a sweep too short)."""
    frame = runs.select(*SWEEP, "x_value", "value", "unit").with_columns(
        pl.col("x_value").cast(pl.Float64, strict=False).alias("_x"),
        pl.int_range(pl.len()).alias("_row"),
    )
    usable = frame.filter((pl.col("unit") == "ns") & (pl.col("_x") > 0) & (pl.col("value") > 0))
    key = [pl.col(c) for c in SWEEP]
    x, t = pl.col("_x"), pl.col("value")
    fitted = usable.with_columns(
        pl.len().over(key).alias("_n"),
        (x.max().over(key) / x.min().over(key)).alias("_span"),
        (x - x.mean().over(key)).alias("_dx"),
        (t - t.mean().over(key)).alias("_dt"),
        x.mean().over(key).alias("_mx"),
        t.mean().over(key).alias("_mt"),
        (x * t).sum().over(key).alias("_sxt"),
        (x * x).sum().over(key).alias("_sxx"),
    )
    slope = (pl.col("_dx") * pl.col("_dt")).sum().over(key) / (pl.col("_dx") ** 2).sum().over(key)
    intercept = pl.col("_mt") - slope * pl.col("_mx")
    fitted = fitted.with_columns(slope.alias("_b0"), intercept.alias("_a0"))
    # Both parts at or above zero: a falling line is all overhead, a line through zero all work.
    per_x = pl.when(pl.col("_b0") <= 0).then(0.0).when(pl.col("_a0") < 0).then(pl.col("_sxt") / pl.col("_sxx")).otherwise(pl.col("_b0"))
    fixed = pl.when(pl.col("_b0") <= 0).then(pl.col("_mt")).when(pl.col("_a0") < 0).then(0.0).otherwise(pl.col("_a0"))
    share = (per_x * x) / (fixed + per_x * x)
    readable = (pl.col("_n") >= MIN_POINTS) & (pl.col("_span") >= MIN_SPAN)
    shares = fitted.select("_row", pl.when(readable).then(share).alias("work_share"))
    return frame.select("_row").join(shares, on="_row", how="left", maintain_order="left")["work_share"]


def launch_bound(runs: pl.DataFrame) -> pl.Series:
    """Per row of `runs`: True where its sweep's shape says its time is mostly overhead (module docstring)."""
    return (work_share(runs) < WORK_SHARE).fill_null(False).alias("launch_bound")
