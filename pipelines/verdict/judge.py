"""The rules of a contender's verdict (SPEC section 9), on frames: per run, then per kernel.

Per run, against its series' level (`baselines`: the median of the current segment's newest points,
pipelines/verdict/level.py, or a `--baseline` file's runs): effect = ln(level / contender) (below 0:
slower), ratio = level / contender (above 1: faster or leaner). Its standard deviation `spread` combines
one run's noise and the level's own: sqrt(noise^2 + (MEDIAN_EFFICIENCY x noise)^2 / baseline_points),
the standard error of a median of that many runs. A run is
- `inconclusive` when its time does not grow with its work (`launch_bound`, from the sweep's shape), when
  its series' noise is unknown, or when it is not beyond RUN_Z spreads and its spread alone exceeds the
  minimum effect (the data could not have told a change of that size);
- `slower` / `faster` when it is beyond RUN_Z spreads AND at least `min_effect` (default 5%) away;
- `same` otherwise (judged: within the noise, or a real change below the minimum effect);
- `no baseline` without a level (or for a metric of no known direction).
`min_detectable` = max(exp(RUN_Z x spread) - 1, min_effect): the smallest relative change the run could have
been called slower or faster for.

Host and baseline provider. Each run is also set against its group's baseline provider (SPEC section 6:
the first of `huggingface`, `torch` present) in the same contender, a baseline provider's own run against
the next one present: relative_effect = its effect - the witness's effect (same backend first). A host that is
uniformly slower moves both by the same factor and leaves the relative effect at 0.

Per kernel (kernel, pass, metric, provider, backend on one GPU), over its runs with an effect (launch-bound
and unknown-noise runs left out): the median effect, the typical (median) spread, `slower` when all hold
(`faster` the other way round):
- the median effect is beyond RUN_Z typical spreads and at least min_effect;
- more runs moved that way than chance allows: the exact one-sided sign test over the runs' directions
  (a run within one spread is a tie) has p <= KERNEL_ALPHA; with fewer than SIGN_TEST_RUNS runs, where
  the test cannot reach it, every run must be slower (or faster) on its own;
- for an implementation with a baseline provider beside it in the contender, the median relative effect
  is at least min_effect too, and beyond RUN_Z typical relative spreads (sqrt of the two runs' spreads
  squared, summed): otherwise the baseline provider moved with it, the host changed, and the
  kernel is `same` with the host named in `host`.
A run or kernel slower (faster) than the level but not beyond RUN_Z spreads and min_effect than the
history's newest point is
`inconclusive`: that point moved already (a step at the newest commit of the history, which change points
cannot confirm before later runs), so the contender is not what moved it.
A kernel not moved whose typical spread exceeds min_effect is `inconclusive` (noise larger than the change
it is asked to see). Only an implementation that is not a baseline provider fails the gate (`gates`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import polars as pl

from pipelines.core.effect import MIN_EFFECT
from pipelines.core.settings import DEFAULT_BASELINES
from pipelines.verdict.level import LEVEL_POINTS

RUN_Z = 3.0
KERNEL_ALPHA = 0.05
SIGN_TEST_RUNS = 5  # the fewest runs whose sign test can reach KERNEL_ALPHA: 2 ** -5 = 0.031
# The standard error of a median of normal values is sqrt(pi / 2) = 1.2533 times a mean's.
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)
VERDICTS = ("slower", "faster", "same", "inconclusive", "no baseline")
KERNEL_KEY = ["kernel", "pass", "metric", "provider", "backend", "gpu_name"]
LOWER_IS_BETTER = ("ns", "bytes")
SERIES = ["group_id", "provider", "backend"]
LAUNCH_BOUND = "launch-bound: time does not grow with the work"
NOISE_UNKNOWN = "noise unknown: the series has too little history to say how much a run moves"
NO_HISTORY = "no history of this series on this GPU"
NO_DIRECTION = "a metric with no known direction"
NOISE_TOO_LARGE = "noise too large"
NEWEST_MOVED = "the history's newest point moved the same way: a step before this run, not yet confirmed"


def judge_runs(
    contender: pl.DataFrame,
    baselines: pl.DataFrame,
    min_effect: float = MIN_EFFECT,
    baseline_providers: Sequence[str] = DEFAULT_BASELINES,
) -> pl.DataFrame:
    """Contender runs with the baseline's columns, ratio, outside (the effect, ln), spread, min_detectable,
    baseline_provider, relative_effect, verdict and reason.

    `baselines` is per series (group_id, provider, backend): baseline_value, baseline_points, noise (sd of
    ln of one run, may be null), noise_method, and optionally baseline_low / baseline_high. A contender
    column `launch_bound` (boolean) marks runs whose time does not grow with their work; absent, none is."""
    frame = contender if "launch_bound" in contender.columns else contender.with_columns(pl.lit(False).alias("launch_bound"))
    frame = frame.with_columns(pl.col("launch_bound").fill_null(False))
    # A reason the caller gave (the launch-bound test's own figures) is kept for the runs it explains.
    given = pl.col("reason") if "reason" in frame.columns else pl.lit(None, pl.String)
    frame = frame.with_columns(given.cast(pl.String).alias("_given_reason"))
    for name in ("baseline_low", "baseline_high", "newest_value"):
        if name not in baselines.columns:
            baselines = baselines.with_columns(pl.lit(None, pl.Float64).alias(name))
    frame = frame.join(
        baselines.select(
            *SERIES, "baseline_value", "baseline_low", "baseline_high", "newest_value", "baseline_points", "noise", "noise_method"
        ),
        on=SERIES,
        how="left",
        maintain_order="left",
    )
    directed = pl.col("unit").is_in(LOWER_IS_BETTER)
    judged = pl.col("baseline_value").is_not_null() & (pl.col("baseline_value") > 0) & directed & (pl.col("value") > 0)
    points = pl.col("baseline_points").cast(pl.Float64).clip(lower_bound=1)
    spread = (pl.col("noise") ** 2 + (MEDIAN_EFFICIENCY * pl.col("noise")) ** 2 / points).sqrt()
    frame = frame.with_columns(
        pl.when(judged).then(pl.col("baseline_value") / pl.col("value")).alias("ratio"),
        pl.when(judged).then((pl.col("baseline_value") / pl.col("value")).log()).alias("outside"),
        pl.when(judged).then(spread).alias("spread"),
        pl.when(judged).then((pl.col("newest_value") / pl.col("value")).log()).alias("newest_effect"),
    ).with_columns(
        pl.when(judged).then(pl.max_horizontal((RUN_Z * pl.col("spread")).exp() - 1, pl.lit(min_effect))).alias("min_detectable")
    )
    least = math.log1p(min_effect)
    beyond = pl.col("outside").abs() > RUN_Z * pl.col("spread")
    big = pl.col("outside").abs() >= least
    # Beyond the newest point of the history too, or that point already moved (an unconfirmed step before this run).
    toward = pl.col("newest_effect") * pl.col("outside").sign()
    past_newest = pl.col("newest_effect").is_null() | ((toward >= least) & (toward > RUN_Z * pl.col("spread")))
    verdict = (
        pl.when(pl.col("baseline_value").is_null())
        .then(pl.lit("no baseline"))
        .when(~directed)
        .then(pl.lit("no baseline"))
        .when(pl.col("launch_bound"))
        .then(pl.lit("inconclusive"))
        .when(pl.col("spread").is_null() | pl.col("spread").is_nan())
        .then(pl.lit("inconclusive"))
        .when(beyond & big & ~past_newest)
        .then(pl.lit("inconclusive"))
        .when(beyond & big & (pl.col("outside") < 0))
        .then(pl.lit("slower"))
        .when(beyond & big & (pl.col("outside") > 0))
        .then(pl.lit("faster"))
        .when(~beyond & (pl.col("spread") > least))
        .then(pl.lit("inconclusive"))
        .otherwise(pl.lit("same"))
    )
    frame = frame.with_columns(verdict.alias("verdict"))
    reason = (
        pl.when(pl.col("verdict") != "no baseline")
        .then(None)
        .when(pl.col("baseline_value").is_null())
        .then(pl.lit(NO_HISTORY))
        .otherwise(pl.lit(NO_DIRECTION))
    )
    frame = frame.with_columns(
        pl.when(pl.col("verdict") == "inconclusive")
        .then(
            pl.when(pl.col("launch_bound"))
            .then(pl.col("_given_reason").fill_null(pl.lit(LAUNCH_BOUND)))
            .when(pl.col("spread").is_null() | pl.col("spread").is_nan())
            .then(pl.lit(NOISE_UNKNOWN))
            .when(beyond & big)
            .then(pl.lit(NEWEST_MOVED))
            .otherwise(
                pl.format(
                    NOISE_TOO_LARGE + ": a run moves about {}%, more than the {}% it is asked to see",
                    ((pl.col("spread").exp() - 1) * 100).round(1),
                    pl.lit(round(min_effect * 100, 1)),
                )
            )
        )
        .otherwise(reason)
        .alias("reason")
    )
    return _relative(frame.drop("_given_reason"), baseline_providers)


def describe(min_effect: float = MIN_EFFECT, points: int = LEVEL_POINTS) -> str:
    """The rule against the warehouse in one line, for a verdict's method line."""
    return (
        f"Level: the median of each series' newest {points} points since its last change point (reruns as one); a run or kernel is "
        f"slower or faster beyond {RUN_Z:g} x the noise of the level and one run and by at least {min_effect:.0%}, kernels "
        f"also relative to the baseline provider in the same run (a move they share is the host's); inconclusive where the "
        f"noise is unknown or larger than that."
    )


def _usable() -> pl.Expr:
    """A run whose effect can be used: measured against a level with a known noise, not launch-bound."""
    return pl.col("outside").is_not_null() & pl.col("spread").is_not_null() & ~pl.col("spread").is_nan() & ~pl.col("launch_bound")


def _relative(frame: pl.DataFrame, baseline_providers: Sequence[str]) -> pl.DataFrame:
    """baseline_provider, relative_effect (the run's effect - its group's baseline provider's, same backend
    first) and relative_spread for every run; a baseline provider's own run is set against the next baseline
    provider present in its group (it cannot be its own witness), as a change point's cause is."""
    rank = {p: i for i, p in enumerate(baseline_providers)}
    frame = frame.with_row_index("_row")
    witnesses = frame.filter(pl.col("provider").is_in(list(baseline_providers)) & _usable()).select(
        "group_id",
        pl.col("provider").alias("baseline_provider"),
        pl.col("backend").alias("_witness_backend"),
        pl.col("outside").alias("_witness_effect"),
        pl.col("spread").alias("_witness_spread"),
        pl.col("provider").replace_strict(rank, return_dtype=pl.Int64).alias("_rank"),
    )
    paired = (
        frame.filter(_usable())
        .select("_row", "group_id", "provider", "backend", "outside", "spread")
        .join(witnesses, on="group_id")
        .filter(pl.col("baseline_provider") != pl.col("provider"))
        .with_columns((pl.col("_witness_backend") != pl.col("backend")).alias("_other_backend"))
        .sort("_row", "_rank", "_other_backend", "_witness_backend")
        .unique("_row", keep="first")
        .select(
            "_row",
            "baseline_provider",
            (pl.col("outside") - pl.col("_witness_effect")).alias("relative_effect"),
            (pl.col("spread") ** 2 + pl.col("_witness_spread") ** 2).sqrt().alias("relative_spread"),
        )
    )
    return frame.join(paired, on="_row", how="left", maintain_order="left").drop("_row")


def sign_test_p(more: int, fewer: int) -> float:
    """Exact one-sided sign test: P(X >= more) for X ~ Binomial(more + fewer, 1/2); 1 with no runs."""
    n = more + fewer
    if n == 0:
        return 1.0
    return min(1.0, sum(math.comb(n, i) for i in range(more, n + 1)) / 2**n)


def kernel_verdict(
    effects: list[float],
    spreads: list[float],
    relative: list[float | None] | None = None,
    min_effect: float = MIN_EFFECT,
    newest: list[float | None] | None = None,
    relative_spreads: list[float | None] | None = None,
) -> tuple[str, str | None]:
    """One kernel's (verdict, note) from its usable runs' effects (ln), spreads, relative effects and effects
    against the history's newest point (module docstring); the note says why a move shared with the baseline
    provider is not counted (`same`), or why an `inconclusive` is (its reason), else None."""
    if not effects:
        return "no baseline", None
    median, typical = _median(effects), _median(spreads)
    least = math.log1p(min_effect)
    for direction, sign in (("slower", -1), ("faster", 1)):
        if not (sign * median > RUN_Z * typical and sign * median >= least):
            continue
        moved = sum(sign * e > s for e, s in zip(effects, spreads))
        against = sum(-sign * e > s for e, s in zip(effects, spreads))
        if len(effects) >= SIGN_TEST_RUNS:
            consistent = sign_test_p(moved, against) <= KERNEL_ALPHA
        else:
            consistent = all(sign * e > RUN_Z * s and sign * e >= least for e, s in zip(effects, spreads))
        if not consistent:
            continue
        since = [n for n in (newest or []) if n is not None]
        if since and not (sign * _median(since) >= least and sign * _median(since) > RUN_Z * typical):
            return "inconclusive", NEWEST_MOVED
        known = [r for r in (relative or []) if r is not None]
        if len(known) * 2 >= len(effects) > 0:
            shared = _median(known)
            relative_typical = _median([r for r in (relative_spreads or []) if r is not None]) or 0.0
            if not (sign * shared >= least and sign * shared > RUN_Z * relative_typical):
                host = (
                    f"the baseline provider moved with it (this implementation {math.exp(-median) - 1:+.1%}, "
                    f"relative to the baseline provider {math.exp(-shared) - 1:+.1%}): the host, not the code"
                )
                return "same", host
        return direction, None
    if typical > least:
        return "inconclusive", None
    return "same", None


def judge_kernels(
    runs: pl.DataFrame, min_effect: float = MIN_EFFECT, baseline_providers: Sequence[str] = DEFAULT_BASELINES
) -> pl.DataFrame:
    """Per kernel (KERNEL_KEY): runs, judged (with an effect), geomean_ratio over those, the count of each
    verdict, median_outside (the median effect, ln), typical_spread, median_relative, sign_test_p, verdict,
    reason, min_detectable, host and gates (whether it can fail the gate); slower first."""
    rows = []
    for key, group in runs.group_by(KERNEL_KEY, maintain_order=True):
        usable = group.filter(_usable())
        effects, spreads = usable["outside"].to_list(), usable["spread"].to_list()
        relative = usable["relative_effect"].to_list() if "relative_effect" in usable.columns else None
        median, typical = _median(effects), _median(spreads)
        newest = usable["newest_effect"].to_list() if "newest_effect" in usable.columns else None
        relative_spreads = usable["relative_spread"].to_list() if "relative_spread" in usable.columns else None
        verdict, host = kernel_verdict(effects, spreads, relative, min_effect, newest, relative_spreads)
        reason = None
        if verdict == "inconclusive" and host is not None:
            reason, host = host, None
        elif not effects:
            verdict, reason = _nothing_usable(group)
        elif verdict == "inconclusive":
            reason = (
                f"{NOISE_TOO_LARGE}: its runs move about {math.exp(typical) - 1:.1%}, more than the {min_effect:.0%} it is asked to see"
            )
        down = sum(e < -s for e, s in zip(effects, spreads))
        up = sum(e > s for e, s in zip(effects, spreads))
        known_relative = [r for r in (relative or []) if r is not None]
        rows.append(
            {
                **dict(zip(KERNEL_KEY, key, strict=True)),
                "runs": group.height,
                "judged": len(effects),
                "geomean_ratio": math.exp(sum(effects) / len(effects)) if effects else None,
                **{count_name(v): group.filter(pl.col("verdict") == v).height for v in VERDICTS},
                "median_outside": median,
                "typical_spread": typical,
                "median_relative": _median(known_relative),
                "sign_test_p": None if median is None else sign_test_p(*((down, up) if median < 0 else (up, down))),
                "verdict": verdict,
                "reason": reason,
                "min_detectable": None if typical is None else max(math.exp(RUN_Z * typical) - 1, min_effect),
                "host": host,
                "gates": key[KERNEL_KEY.index("provider")] not in baseline_providers,
            }
        )
    frame = pl.DataFrame(rows, schema=KERNELS, orient="row") if rows else pl.DataFrame(schema=KERNELS)
    order = pl.col("verdict").replace_strict({v: i for i, v in enumerate(VERDICTS)}, return_dtype=pl.Int8)
    return frame.sort(order, ~pl.col("gates"), *KERNEL_KEY)


def _nothing_usable(group: pl.DataFrame) -> tuple[str, str]:
    """A kernel none of whose runs has a usable effect: inconclusive with its runs' commonest reason, else no baseline."""
    for verdict in ("inconclusive", "no baseline"):
        reasons = [r for r in group.filter(pl.col("verdict") == verdict)["reason"].to_list() if r]
        if reasons:
            return verdict, Counter(reasons).most_common(1)[0][0]
    return "no baseline", NO_HISTORY


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
        "median_relative": pl.Float64,
        "sign_test_p": pl.Float64,
        "verdict": pl.String,
        "reason": pl.String,
        "min_detectable": pl.Float64,
        "host": pl.String,
        "gates": pl.Boolean,
    }
)


FAILED = "failed in the contender"
# What a whole verdict's word means to a script: 1 a gating kernel slower, 3 nothing judged, else 0.
EXIT_CODES = {"slower": 1, "faster": 0, "same": 0, "inconclusive": 3, "no baseline": 3}


def finish_kernels(kernels: pl.DataFrame, runs: pl.DataFrame, min_effect: float = MIN_EFFECT) -> pl.DataFrame:
    """Two rules judge_kernels cannot see from effects alone:
    - a run that passed in the baseline and failed in the contender (reason FAILED) makes its kernel `slower`;
    - a kernel of fewer than SIGN_TEST_RUNS usable runs (a sweep of four sizes), `same` and not explained by
      the host, is `slower` when every run is slower by at least `min_effect` and their geomean by more than its
      `min_detectable` (`faster` the other way), also when its noise alone made it `inconclusive`: each run need
      not leave its own noise, since a sweep's sizes
      share the machine's state and a kernel moved at every size is what a regression looks like."""
    least = math.log1p(min_effect)
    usable = runs.filter(_usable())
    per = usable.group_by(KERNEL_KEY).agg(
        (pl.col("outside") <= -least).all().alias("_all_slower"),
        (pl.col("outside") >= least).all().alias("_all_faster"),
        pl.len().alias("_usable"),
    )
    failed = runs.filter(pl.col("reason") == FAILED).group_by(KERNEL_KEY).agg(pl.len().alias("_failed"))
    frame = kernels.join(per, on=KERNEL_KEY, how="left", maintain_order="left", nulls_equal=True)
    frame = frame.join(failed, on=KERNEL_KEY, how="left", maintain_order="left", nulls_equal=True)
    # `inconclusive` for its noise alone: the sweep as a whole can still tell what no single size could.
    undecided = (pl.col("verdict") == "same") | ((pl.col("verdict") == "inconclusive") & pl.col("reason").str.starts_with(NOISE_TOO_LARGE))
    few = pl.col("_usable").fill_null(0).is_between(1, SIGN_TEST_RUNS - 1) & undecided.fill_null(False) & pl.col("host").is_null()
    beyond = pl.col("median_outside").abs() > (1 + pl.col("min_detectable")).log()
    verdict = (
        pl.when(pl.col("_failed").fill_null(0) > 0)
        .then(pl.lit("slower"))
        .when(few & beyond & pl.col("_all_slower"))
        .then(pl.lit("slower"))
        .when(few & beyond & pl.col("_all_faster"))
        .then(pl.lit("faster"))
        .otherwise(pl.col("verdict"))
    )
    reason = (
        pl.when(pl.col("_failed").fill_null(0) > 0)
        .then(pl.format("{} run(s) {}", pl.col("_failed"), pl.lit(FAILED)))
        .when(few & beyond & (pl.col("_all_slower") | pl.col("_all_faster")))
        .then(None)
        .otherwise(pl.col("reason"))
    )
    frame = frame.with_columns(verdict.alias("verdict"), reason.alias("reason")).drop("_usable", "_failed", "_all_slower", "_all_faster")
    order = pl.col("verdict").replace_strict({v: i for i, v in enumerate(VERDICTS)}, return_dtype=pl.Int8)
    return frame.sort(order, ~pl.col("gates"), *KERNEL_KEY)


def overall(kernels: pl.DataFrame) -> str:
    """A whole verdict's word: `slower` when a kernel that gates is (not a baseline provider), else the first of
    faster, same that any kernel is, `same` when only baseline providers are slower (judged, reported, not
    failed), else inconclusive, else no baseline."""
    if kernels.filter(pl.col("gates") & (pl.col("verdict") == "slower")).height:
        return "slower"
    found = set(kernels["verdict"].to_list())
    for word in ("faster", "same"):
        if word in found:
            return word
    if "slower" in found:
        return "same"
    return "inconclusive" if "inconclusive" in found else "no baseline"
