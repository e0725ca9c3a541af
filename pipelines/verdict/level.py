"""A series' level for the verdict: a robust median of its current segment, and the spread of a recent window.

The baseline of a contender run is not the last few runs' range (one spike, or an older commit benchmarked
later, would blind it) but the level of the series' current segment: the points after its last change
point, reruns of one commit counted as one point (the median of their ln values), ordered by `order` (the
benchmarked commit's place in `main` where the caller knows it, else observed time). The level is the
median of the segment's last LEVEL_POINTS points; its uncertainty is that of a median of that many runs.
`newest_value` is the newest point alone: a step at the newest point of `main` has no change point yet (it
needs points after it), and a contender that only repeats it is not what made the series slower.

The window spread is the interquartile range of the ln values of the segment's last WINDOW_POINTS points,
as a standard deviation (IQR / 1.349): a floor under the series' noise. Consecutive differences cannot see
a host that flips between two modes (runs alternate 0% and 1.2% and most consecutive pairs agree); a
window of points spanning both modes does.
"""

from __future__ import annotations

import polars as pl

# The level: the median of the segment's newest points; 6 outvotes two spikes and still follows a step
# that the change points confirmed.
LEVEL_POINTS = 6
# The window a spread is read over, and the fewest points that make a spread at all.
WINDOW_POINTS = 10
MIN_WINDOW = 3
# The interquartile range of a normal distribution is 1.349 sigma.
IQR_TO_SIGMA = 1.349
SERIES = ["group_id", "provider", "backend"]

LEVELS = pl.Schema(
    {
        "group_id": pl.String,
        "provider": pl.String,
        "backend": pl.String,
        "baseline_value": pl.Float64,
        "baseline_low": pl.Float64,
        "baseline_high": pl.Float64,
        "baseline_points": pl.Int64,
        "newest_value": pl.Float64,
        "segment_points": pl.Int64,
        "series_points": pl.Int64,
        "window_noise": pl.Float64,
    }
)


def collapse_reruns(points: pl.DataFrame) -> pl.DataFrame:
    """One point per (series, commit): the median ln value of its runs, at its first run's `order`.

    `points`: SERIES, value (> 0), commit (null: a point of its own), order (anything sortable)."""
    logs = points.filter(pl.col("value") > 0).with_columns(
        pl.col("value").log().alias("ln"),
        pl.coalesce(pl.col("commit"), pl.format("#{}", pl.int_range(pl.len()))).alias("commit"),
    )
    return logs.group_by(*SERIES, "commit").agg(pl.col("ln").median(), pl.col("order").min()).sort(*SERIES, "order", "commit")


def segment(points: pl.DataFrame, starts: pl.DataFrame | None) -> pl.DataFrame:
    """The points at or after each series' segment start (`starts`: SERIES, segment_start, in `order`'s type);
    a series without one keeps every point."""
    if starts is None or starts.is_empty():
        return points
    joined = points.join(starts.select(*SERIES, "segment_start"), on=SERIES, how="left")
    return joined.filter(pl.col("segment_start").is_null() | (pl.col("order") >= pl.col("segment_start"))).drop("segment_start")


def levels(points: pl.DataFrame, starts: pl.DataFrame | None = None) -> pl.DataFrame:
    """LEVELS per series of `points` (see collapse_reruns): the level of its current segment and its window spread."""
    if points.is_empty():
        return pl.DataFrame(schema=LEVELS)
    collapsed = collapse_reruns(points)
    current = segment(collapsed, starts)
    newest_first = current.sort(*SERIES, "order", descending=[False, False, False, True]).with_columns(
        pl.int_range(pl.len()).over(SERIES).alias("age")
    )
    level = (
        newest_first.filter(pl.col("age") < LEVEL_POINTS)
        .group_by(SERIES)
        .agg(
            pl.col("ln").median().exp().alias("baseline_value"),
            pl.col("ln").min().exp().alias("baseline_low"),
            pl.col("ln").max().exp().alias("baseline_high"),
            pl.len().cast(pl.Int64).alias("baseline_points"),
            pl.col("ln").first().exp().alias("newest_value"),
        )
    )
    window = (
        newest_first.filter(pl.col("age") < WINDOW_POINTS)
        .group_by(SERIES)
        .agg(
            pl.len().alias("n"),
            ((pl.col("ln").quantile(0.75, "linear") - pl.col("ln").quantile(0.25, "linear")) / IQR_TO_SIGMA).alias("window_noise"),
        )
    )
    sizes = current.group_by(SERIES).agg(pl.len().cast(pl.Int64).alias("segment_points"))
    whole = collapsed.group_by(SERIES).agg(pl.len().cast(pl.Int64).alias("series_points"))
    frame = level.join(sizes, on=SERIES).join(whole, on=SERIES).join(window, on=SERIES)
    frame = frame.with_columns(pl.when(pl.col("n") >= MIN_WINDOW).then(pl.col("window_noise")).alias("window_noise"))
    return frame.select(LEVELS.names()).cast(dict(LEVELS)).sort(SERIES)
