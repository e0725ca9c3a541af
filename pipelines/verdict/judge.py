"""The rules of a contender's verdict (SPEC section 9), on frames: per run, then per kernel.

The baseline of a run is its series' latest BASELINE_POINTS runs (pipelines/verdict/verdict.py): ratio =
their median / the contender's value (above 1: faster or leaner). The verdict asks more than the median:
a run is `slower` when it is slower than each of those runs, beyond the noise, and `faster` when it is
faster than each. Its `outside` is how far, in ln, it lies beyond the recent runs' range ([lowest,
highest] value; 0 inside it, negative on the slow side), and the run is `slower` when
outside < -RUN_Z * spread, `faster` when outside > RUN_Z * spread, else `same`; spread = sqrt(2) * noise,
the spread of the difference of two runs of noise `noise` each (the series' noise of one run, SPEC
section 8). The range keeps a spike of the series from becoming the baseline, and a step at its newest
run from making the old level the baseline; a series that never varied (noise 0, memory mostly) calls any
run outside its range.

Per kernel (kernel, pass, metric, provider, backend on one GPU), over its runs with a baseline, `slower` when
both hold (`faster` the other way round):
- the kernel's median run is slower by the rule a run is judged by: the median `outside` is below
  -RUN_Z times the kernel's typical spread (the median of its runs' spreads), so a handful of noisy shapes
  cannot make it, nor a drift of the host that every shape shares but that stays inside the noise;
- more runs moved out that way than chance allows: the exact one-sided sign test of `outside` (runs
  inside the range are ties, left out) has p <= KERNEL_ALPHA; a kernel with fewer than SIGN_TEST_RUNS runs
  with a baseline, where the test cannot reach it, needs every one of them `slower` on its own instead.
"""

from __future__ import annotations

import math

import polars as pl

RUN_Z = 3.0
KERNEL_ALPHA = 0.05
SIGN_TEST_RUNS = 5  # the fewest runs whose sign test can reach KERNEL_ALPHA: 2 ** -5 = 0.031
VERDICTS = ("slower", "faster", "same", "no baseline")
KERNEL_KEY = ["kernel", "pass", "metric", "provider", "backend", "gpu_name"]
LOWER_IS_BETTER = ("ns", "bytes")
SERIES = ["group_id", "provider", "backend"]


def judge_runs(
    contender: pl.DataFrame, baselines: pl.DataFrame, noise: pl.DataFrame | None = None, *, min_effect: float | None = None
) -> pl.DataFrame:
    """Contender runs with the baseline's columns, noise, noise_method, ratio, outside, spread and verdict.

    `baselines` (baseline_value, baseline_low, baseline_high, baseline_points) and `noise` are per series
    (group_id, provider, backend); a run without a baseline (or of a metric with no known direction) gets
    `no baseline`, one whose series has no noise estimate `same`. Without `noise`, `baselines` carries each
    series' `noise` and `noise_method` itself; with `min_effect`, `contract_runs` applies the shared contract."""
    frame = contender.join(baselines, on=SERIES, how="left", maintain_order="left")
    if noise is not None:
        noise = noise.select(*SERIES, "noise", pl.col("method").alias("noise_method"))
        frame = frame.join(noise, on=SERIES, how="left", maintain_order="left")
    judged = pl.col("baseline_value").is_not_null() & pl.col("unit").is_in(LOWER_IS_BETTER) & (pl.col("value") > 0)
    slow_side = (pl.col("baseline_high") / pl.col("value")).log()  # below 0: slower than the slowest recent run
    fast_side = (pl.col("baseline_low") / pl.col("value")).log()  # above 0: faster than the fastest recent run
    outside = pl.when(slow_side < 0).then(slow_side).when(fast_side > 0).then(fast_side).otherwise(pl.lit(0.0))
    frame = frame.with_columns(
        pl.when(judged).then(pl.col("baseline_value") / pl.col("value")).alias("ratio"),
        pl.when(judged).then(outside).alias("outside"),
        pl.when(judged).then(pl.col("noise") * math.sqrt(2)).alias("spread"),
    )
    verdict = (
        pl.when(~judged)
        .then(pl.lit("no baseline"))
        .when(pl.col("spread").is_null())
        .then(pl.lit("same"))
        .when(pl.col("outside") < -RUN_Z * pl.col("spread"))
        .then(pl.lit("slower"))
        .when(pl.col("outside") > RUN_Z * pl.col("spread"))
        .then(pl.lit("faster"))
        .otherwise(pl.lit("same"))
    )
    frame = frame.with_columns(verdict.alias("verdict"))
    return frame if min_effect is None else contract_runs(frame, min_effect)


def sign_test_p(more: int, fewer: int) -> float:
    """Exact one-sided sign test: P(X >= more) for X ~ Binomial(more + fewer, 1/2); 1 with no runs."""
    n = more + fewer
    if n == 0:
        return 1.0
    return min(1.0, sum(math.comb(n, i) for i in range(more, n + 1)) / 2**n)


def kernel_verdict(outside: list[float], spreads: list[float | None], verdicts: list[str]) -> str:
    """One kernel's verdict from its runs with a baseline (module docstring)."""
    if not outside:
        return "no baseline"
    median, typical = _median(outside), _median([s for s in spreads if s is not None])
    if typical is None:
        return "same"
    slower, faster = sum(x < 0 for x in outside), sum(x > 0 for x in outside)
    for direction, moved, against in (("slower", slower, faster), ("faster", faster, slower)):
        beyond = median < -RUN_Z * typical if direction == "slower" else median > RUN_Z * typical
        if len(outside) >= SIGN_TEST_RUNS:
            consistent = sign_test_p(moved, against) <= KERNEL_ALPHA
        else:
            consistent = all(v == direction for v in verdicts)
        if beyond and consistent:
            return direction
    return "same"


def judge_kernels(runs: pl.DataFrame) -> pl.DataFrame:
    """Per kernel (KERNEL_KEY): runs, judged (with a baseline), geomean_ratio over those, the count of each
    verdict, median_outside, typical_spread, sign_test_p (toward the median's side) and verdict; slower first."""
    rows = []
    for key, group in runs.group_by(KERNEL_KEY, maintain_order=True):
        judged = group.filter(pl.col("ratio").is_not_null())
        outside, spreads = judged["outside"].to_list(), judged["spread"].to_list()
        logs = [math.log(r) for r in judged["ratio"].to_list()]
        median = _median(outside)
        down, up = sum(x < 0 for x in outside), sum(x > 0 for x in outside)
        rows.append(
            {
                **dict(zip(KERNEL_KEY, key, strict=True)),
                "runs": group.height,
                "judged": judged.height,
                "geomean_ratio": math.exp(sum(logs) / len(logs)) if logs else None,
                **{count_name(v): group.filter(pl.col("verdict") == v).height for v in VERDICTS},
                "median_outside": median,
                "typical_spread": _median([s for s in spreads if s is not None]),
                "sign_test_p": None if median is None else sign_test_p(*((down, up) if median < 0 else (up, down))),
                "verdict": kernel_verdict(outside, spreads, judged["verdict"].to_list()),
            }
        )
    frame = pl.DataFrame(rows, schema=KERNELS, orient="row") if rows else pl.DataFrame(schema=KERNELS)
    order = pl.col("verdict").replace_strict({v: i for i, v in enumerate(VERDICTS)}, return_dtype=pl.Int8)
    return frame.sort(order, *KERNEL_KEY)


def count_name(verdict: str) -> str:
    """The column of a verdict's count: `no baseline` -> `no_baseline`."""
    return verdict.replace(" ", "_")


def _median(values: list[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


KERNELS = pl.Schema(
    {
        **{k: pl.String for k in KERNEL_KEY},
        "runs": pl.Int64,
        "judged": pl.Int64,
        "geomean_ratio": pl.Float64,
        **{count_name(v): pl.Int64 for v in VERDICTS},
        "median_outside": pl.Float64,
        "typical_spread": pl.Float64,
        "sign_test_p": pl.Float64,
        "verdict": pl.String,
    }
)


# The shared contract of issue 28 (verdict words, `reason`, `min_detectable`, `launch_bound`, a minimum effect,
# exit 3), the least of it, kept apart so that the rewrite of the rules above can replace it whole.
MIN_EFFECT = 0.05
CONTRACT_VERDICTS = ("slower", "faster", "same", "inconclusive", "no baseline")
EXIT_CODES = {"slower": 1, "faster": 0, "same": 0, "inconclusive": 3, "no baseline": 3}


def contract_runs(runs: pl.DataFrame, min_effect: float = MIN_EFFECT) -> pl.DataFrame:
    """Runs judged by `judge_runs`, with `reason` and `min_detectable` (the smallest relative change the run
    could show: RUN_Z spreads, never below `min_effect`): a run the `launch_bound` column marks, or whose noise
    is unknown, is `inconclusive`; a `slower` or `faster` run that moved less than `min_effect` is `same`."""
    if "launch_bound" not in runs.columns:
        runs = runs.with_columns(pl.lit(False).alias("launch_bound"))
    if "reason" not in runs.columns:
        runs = runs.with_columns(pl.lit(None, pl.String).alias("reason"))
    detectable = pl.max_horizontal((RUN_Z * pl.col("spread")).exp() - 1, pl.lit(min_effect))
    judged = pl.col("verdict").is_in(["slower", "faster", "same"])
    small = (pl.col("ratio").log().abs() < math.log(1 + min_effect)) & pl.col("verdict").is_in(["slower", "faster"])
    return runs.with_columns(
        pl.when(judged).then(detectable).alias("min_detectable"),
        pl.when(judged & pl.col("launch_bound").fill_null(False))
        .then(pl.lit("inconclusive"))
        .when(judged & pl.col("spread").is_null())
        .then(pl.lit("inconclusive"))
        .when(small)
        .then(pl.lit("same"))
        .otherwise(pl.col("verdict"))
        .alias("verdict"),
        pl.when(pl.col("reason").is_not_null())
        .then(pl.col("reason"))
        .when(judged & pl.col("launch_bound").fill_null(False))
        .then(pl.lit("launch-bound: its time does not grow with its work"))
        .when(judged & pl.col("spread").is_null())
        .then(pl.lit("unknown noise"))
        .when(pl.col("verdict") == "no baseline")
        .then(pl.lit("no run of the same workload, GPU, provider and backend in the history"))
        .alias("reason"),
    )


def contract_kernels(kernels: pl.DataFrame, runs: pl.DataFrame, min_effect: float = MIN_EFFECT) -> pl.DataFrame:
    """Kernels of `judge_kernels` over contract runs: `inconclusive` (with the commonest reason) where none of its
    runs was judged but some were inconclusive, `slower` where a run failed in the contender that passed in
    the baseline; `min_detectable` is the median of its judged runs'. A kernel of fewer than SIGN_TEST_RUNS
    judged runs (a sweep of four sizes) is also `slower` when every one of them is slower by at least
    `min_effect` and their geomean by more than its `min_detectable` (`faster` the other way): each run need not
    leave its own noise, since a sweep's sizes share the machine's state and a kernel moved at every size is
    what a regression looks like; one size that moved less than the minimum effect keeps it `same`."""
    runs = runs.with_columns(pl.col("ratio").log().alias("_log"))
    judged_run = pl.col("verdict").is_in(["slower", "faster", "same"])
    per = runs.group_by(KERNEL_KEY).agg(
        (pl.col("_log").filter(judged_run) < -math.log(1 + min_effect)).all().alias("_all_slower"),
        (pl.col("_log").filter(judged_run) > math.log(1 + min_effect)).all().alias("_all_faster"),
        (pl.col("verdict") == "inconclusive").sum().alias("inconclusive"),
        pl.col("verdict").is_in(["slower", "faster", "same"]).sum().alias("_judged"),
        (pl.col("reason") == FAILED).sum().alias("_failed"),
        pl.col("min_detectable").filter(pl.col("verdict").is_in(["slower", "faster", "same"])).median().alias("min_detectable"),
        pl.col("reason").filter(pl.col("verdict") == "inconclusive").str.replace(r" \(.*\)$", "").mode().first().alias("_reason"),
        pl.col("reason").filter(pl.col("verdict") == "no baseline").mode().first().alias("_no_baseline"),
    )
    frame = kernels.drop("inconclusive", "min_detectable", "reason", strict=False).join(
        per, on=KERNEL_KEY, how="left", maintain_order="left", nulls_equal=True
    )
    few = (pl.col("_judged") > 0) & (pl.col("_judged") < SIGN_TEST_RUNS) & (pl.col("verdict") == "same")
    beyond = pl.col("geomean_ratio").log().abs() > (1 + pl.col("min_detectable")).log()
    verdict = (
        pl.when(pl.col("_failed") > 0)
        .then(pl.lit("slower"))
        .when((pl.col("_judged") == 0) & (pl.col("inconclusive") > 0))
        .then(pl.lit("inconclusive"))
        .when(few & beyond & pl.col("_all_slower") & (pl.col("geomean_ratio") < 1))
        .then(pl.lit("slower"))
        .when(few & beyond & pl.col("_all_faster") & (pl.col("geomean_ratio") > 1))
        .then(pl.lit("faster"))
        .otherwise(pl.col("verdict"))
    )
    reason = (
        pl.when(pl.col("_failed") > 0)
        .then(pl.format("{} run(s) {}", pl.col("_failed"), pl.lit(FAILED)))
        .when((pl.col("_judged") == 0) & (pl.col("inconclusive") > 0))
        .then(pl.col("_reason"))
        .when(pl.col("verdict") == "no baseline")
        .then(pl.col("_no_baseline").fill_null("no comparable run"))
    )
    frame = frame.with_columns(verdict.alias("verdict"), reason.alias("reason"))
    frame = frame.drop("_judged", "_failed", "_reason", "_no_baseline", "_all_slower", "_all_faster")
    order = pl.col("verdict").replace_strict({v: i for i, v in enumerate(CONTRACT_VERDICTS)}, return_dtype=pl.Int8)
    return frame.sort(order, *KERNEL_KEY)


FAILED = "failed in the contender"


def overall(kernels: pl.DataFrame) -> str:
    """The verdict of a whole contender: `slower` when any kernel is, else `faster`, `same`, else `inconclusive`
    when something could not be judged, else `no baseline`."""
    found = set(kernels["verdict"].to_list())
    return next((word for word in CONTRACT_VERDICTS if word in found), "no baseline")
