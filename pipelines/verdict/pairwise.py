"""Branch against main on one machine: a contender CSV judged against one or more baseline CSVs (SPEC section 9).

Both are read in memory by `contender.read_contender` (the ingest's own code), so a run pairs with the baseline
runs of its series: the same group (kernel, workload, pass, metric, GPU), provider and backend. A series'
baseline is the median of its baseline runs (their range too: `baseline_low`, `baseline_high`), and its noise of
one run (a standard deviation of ln(value)) is the largest of what is known of it, named in `noise_method`:

- `baselines`: the spread of the baseline runs of that series, with two or more baseline files;
- `pair`: this machine's spread between the files, 1.4826 x the median absolute deviation of ln(contender /
  baseline) over the baseline providers' points (torch, huggingface: code a Liger branch does not change) of the
  GPU and unit that are not launch-bound, / sqrt(2) (the difference of two runs); over every provider's points
  where the baseline providers have fewer than PAIR_POINTS. Robust, and blind to what the branch changed: a
  branch that made every liger kernel slower does not widen it;
- `series_noise` or `pooled`: the warehouse's noise of that series, where a warehouse is at hand (optional);
- `band`: the runs' own p20-p80 (a normal's p20-p80 is 1.683 standard deviations), which only sees the
  repeats inside one run, never two boots of a machine: it is a floor, never the noise alone.

With one baseline file, no warehouse noise and too few points to measure the pair's, the noise is unknown and
the run `inconclusive`. A point whose baseline sweep is launch-bound, or whose own sweep is while the baseline's
was not clearly bound by its work (pipelines/verdict/launch_bound.py), is `inconclusive` too. A run that passed
in the baseline and failed (no median) in the contender is `slower`. `judge` holds the rules of a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.core.settings import DEFAULT_BASELINES
from pipelines.statistics import db
from pipelines.verdict import judge
from pipelines.verdict import verdict_noise as noise
from pipelines.verdict.against_history import baseline_provider_messages, host_messages
from pipelines.verdict.contender import Contender, read_contender
from pipelines.verdict.holds import history_holds
from pipelines.verdict.launch_bound import WORK_SHARE, work_share
from pipelines.verdict.scoreboard import scoreboard

SERIES = judge.SERIES
PAIR_POINTS = 8
BAND_SDS = 1.683  # p80 - p20 of a normal, in standard deviations
MAD_SD = 1.4826  # a normal's standard deviation per median absolute deviation
# The baseline's own sweep clearly bound by its work: a contender flat there is the change to judge, not overhead.
WORK_BOUND = 0.8


@dataclass(frozen=True)
class PairVerdict:
    """A contender judged against baseline files; the interface `render` reads, as verdict.Verdict's."""

    contender: Contender
    baselines: tuple[Contender, ...]
    runs: pl.DataFrame  # the contender's runs, judged: render.RUN_FIELDS
    kernels: pl.DataFrame  # judge.KERNELS with inconclusive, reason, min_detectable
    scoreboard: pl.DataFrame  # scoreboard.SCHEMA of the contender's own runs
    min_effect: float
    pair_noise: float | None  # the pair's noise of one speed run (the median over GPUs with several)
    warehouse_note: str | None = None  # why the warehouse's noise was not used, when it was looked for
    holds: pl.DataFrame | None = None
    noise_source: str = "baseline files"
    warehouse_dir: Path | None = None

    @property
    def verdict(self) -> str:
        return judge.overall(self.kernels)

    @property
    def exit_code(self) -> int:
        return judge.EXIT_CODES[self.verdict]

    def messages(self) -> list[str]:
        """What a reader must know beside the tables: a host change, slower baseline providers, files, runs left
        out, GPUs or series that did not pair."""
        c, lines = self.contender, [*host_messages(self.kernels), *baseline_provider_messages(self.kernels)]
        paired = self.runs.filter(pl.col("baseline_value").is_not_null()).height
        if not paired:
            gpus = sorted({g for b in self.baselines for g in b.gpus})
            lines.append(
                f"no run of the contender pairs with a baseline run (same kernel, workload, pass, metric, GPU, provider "
                f"and backend); the baselines ran on {', '.join(gpus) or 'no GPU'}"
            )
        for name, run in (("contender", c), *(("baseline", b) for b in self.baselines)):
            if run.conflicts.height:
                lines.append(
                    f"{run.conflicts.height} run(s) of the {name} {run.path.name} are written twice with other values "
                    f"(same key and timestamp) and are left out, as the warehouse quarantines them: "
                    + ", ".join(f"{r['kernel']} {r['pass']} {r['provider']}" for r in run.conflicts.head(3).iter_rows(named=True))
                )
            if run.quarantined:
                lines.append(f"{run.quarantined} row(s) of the {name} {run.path.name} are not readable; the first: {run.quarantine_reason}")
        failed = self.runs.filter(pl.col("reason") == judge.FAILED).height
        if c.failed - failed > 0:
            lines.append(f"{c.failed - failed} run(s) of the contender without a median (failed upstream) have no passed baseline run")
        if c.other_gpus:
            lines.append(f"--gpu left out the runs on {', '.join(c.other_gpus)}")
        if self.warehouse_note:
            lines.append(self.warehouse_note)
        return lines


def read_baselines(paths: Sequence[Path], backend: str | None, gpu: str | None) -> tuple[Contender, ...]:
    """Each baseline file read as a contender is (BadContender names the file that cannot be)."""
    return tuple(read_contender(Path(p), backend=backend, gpu=gpu) for p in paths)


def judge_pair(
    csv: Path,
    baseline_csvs: Sequence[Path],
    *,
    gpu: str | None = None,
    backend: str | None = None,
    min_effect: float = judge.MIN_EFFECT,
    warehouse_dir: Path | None = None,
) -> PairVerdict:
    """Read the contender and its baseline files, judge it (module docstring). `warehouse_dir`, optional, adds the
    warehouse's series noise and what its history holds; a missing warehouse is no error here."""
    contender = read_contender(Path(csv), backend=backend, gpu=gpu)
    bases = read_baselines(baseline_csvs, backend, gpu)
    warehouse_noise, holds, note = _from_warehouse(warehouse_dir, contender)
    frame = baseline_frame(contender, bases, warehouse_noise)
    runs = judge_with(contender, frame, bases, min_effect)
    speed = frame.filter(pl.col("_unit") == "ns") if frame.height else frame
    pair = speed["pair_noise"].drop_nulls().median() if speed.height else None
    return PairVerdict(
        contender=contender,
        baselines=bases,
        runs=runs,
        kernels=kernels_of(runs, min_effect),
        scoreboard=scoreboard(contender.runs),
        min_effect=min_effect,
        pair_noise=pair,
        warehouse_note=note,
        holds=holds,
        warehouse_dir=warehouse_dir,
    )


def _from_warehouse(warehouse_dir: Path | None, contender: Contender) -> tuple[pl.DataFrame | None, pl.DataFrame | None, str | None]:
    """(the warehouse's series noise, what its history holds, a note when it was asked for and could not serve)."""
    if warehouse_dir is None:
        return None, None, None
    try:
        with db.session(Path(warehouse_dir)) as session:
            series = contender.runs.select("group_id", "provider", "backend", "kernel", "pass", "metric", "gpu_name").unique()
            session.con.register("contender_series", series.to_arrow())
            found = noise.series_noise(session)
            holds = history_holds(session)
    except db.WarehouseMissing:
        return None, None, None
    except Exception as exc:  # an old or damaged warehouse: the files alone still judge
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, None, f"the warehouse's noise is not used ({first})"
    return found, holds, None


def _band(p20: str, p80: str) -> pl.Expr:
    return pl.when((pl.col(p20) > 0) & (pl.col(p80) >= pl.col(p20))).then((pl.col(p80) / pl.col(p20)).log() / BAND_SDS)


def baseline_frame(
    contender: Contender,
    bases: Sequence[Contender],
    warehouse_noise: pl.DataFrame | None = None,
    reference: Sequence[str] = DEFAULT_BASELINES,
) -> pl.DataFrame:
    """Per series of the baseline files: judge's baseline columns (baseline_value, baseline_low, baseline_high,
    baseline_points, noise, noise_method), the baseline sweep's `work_share`, and `pair_noise` (module docstring)."""
    runs = pl.concat([b.runs.with_columns(work_share(b.runs).alias("work_share")) for b in bases], how="vertical_relaxed")
    frame = runs.group_by(SERIES).agg(
        pl.col("value").median().alias("baseline_value"),
        pl.col("value").min().alias("baseline_low"),
        pl.col("value").max().alias("baseline_high"),
        pl.len().alias("baseline_points"),
        pl.col("value").log().std().alias("_spread"),
        _band("p20", "p80").median().alias("_band"),
        pl.col("work_share").median().alias("base_share"),
        pl.col("gpu_name").first().alias("_gpu"),
        pl.col("unit").first().alias("_unit"),
    )
    own = contender.runs.with_columns(work_share(contender.runs).alias("own_share"), _band("p20", "p80").alias("_own_band"))
    mine = own.group_by(SERIES).agg(pl.col("own_share").median(), pl.col("_own_band").median(), pl.col("value").median().alias("_own"))
    frame = frame.join(mine, on=SERIES, how="left")
    # The pair's noise per GPU and unit: the robust spread of ln(contender / baseline) over points bound by their work.
    frame = frame.with_columns((pl.col("_own") / pl.col("baseline_value")).log().alias("_d"))
    usable = (
        pl.col("_d").is_not_null()
        & (pl.col("base_share").fill_null(1.0) >= WORK_SHARE)
        & (pl.col("own_share").fill_null(1.0) >= WORK_SHARE)
    )
    place = ["_gpu", "_unit"]
    unchanged = usable & pl.col("provider").is_in(list(reference))
    frame = frame.with_columns(
        pl.when(unchanged.sum().over(place) >= PAIR_POINTS).then(unchanged).otherwise(usable).alias("_usable"),
    )
    deviation = (pl.col("_d") - pl.col("_d").filter("_usable").median().over(place)).abs()
    frame = frame.with_columns(
        pl.when(pl.col("_usable").sum().over(place) >= PAIR_POINTS)
        .then(MAD_SD * deviation.filter("_usable").median().over(place) / math.sqrt(2))
        .alias("pair_noise")
    )
    if warehouse_noise is not None and warehouse_noise.height:
        known = warehouse_noise.select(*SERIES, pl.col("noise").alias("_warehouse"), pl.col("method").alias("_warehouse_method"))
        frame = frame.join(known, on=SERIES, how="left")
    else:
        frame = frame.with_columns(pl.lit(None, pl.Float64).alias("_warehouse"), pl.lit(None, pl.String).alias("_warehouse_method"))
    candidates = {
        "baselines": pl.col("_spread"),
        "pair": pl.col("pair_noise"),
        "warehouse": pl.col("_warehouse"),
        "band": pl.max_horizontal("_band", "_own_band"),
    }
    # The band alone is no noise of two runs: without any other estimate the noise is unknown.
    known_other = pl.any_horizontal([candidates[k].is_not_null() for k in ("baselines", "pair", "warehouse")])
    largest = pl.max_horizontal(*candidates.values())
    method = pl.lit(None, pl.String)
    for name, expr in reversed(candidates.items()):
        label = pl.col("_warehouse_method") if name == "warehouse" else pl.lit(name)
        method = pl.when(expr.is_not_null() & (expr >= largest)).then(label).otherwise(method)
    frame = frame.with_columns(
        pl.when(known_other).then(largest).alias("noise"),
        pl.when(known_other).then(method).alias("noise_method"),
    )
    return frame.select(
        *SERIES,
        "_unit",
        "baseline_value",
        "baseline_low",
        "baseline_high",
        "baseline_points",
        "noise",
        "noise_method",
        "base_share",
        "pair_noise",
    )


def judge_with(contender: Contender, frame: pl.DataFrame, bases: Sequence[Contender], min_effect: float) -> pl.DataFrame:
    """The contender's runs judged against `frame` (baseline_frame), with `launch_bound` marked, and its failed
    runs whose series passed in a baseline as `slower` (reason judge.FAILED)."""
    own_share = work_share(contender.runs)
    base_share = contender.runs.select(SERIES).join(frame.select(*SERIES, "base_share"), on=SERIES, how="left", maintain_order="left")
    shares = pl.DataFrame({"own": own_share, "base": base_share["base_share"]})
    bound = shares.select(
        ((pl.col("base") < WORK_SHARE) | ((pl.col("own") < WORK_SHARE) & (pl.col("base").fill_null(0.0) < WORK_BOUND)))
        .fill_null(False)
        .alias("launch_bound")
    )["launch_bound"]
    reason = (
        pl.when(pl.col("launch_bound"))
        .then(
            pl.format(
                "launch-bound: its time does not grow with its work (work share {} here, {} in the baseline)",
                pl.col("_own").round(2).cast(pl.String).fill_null("?"),
                pl.col("_base").round(2).cast(pl.String).fill_null("?"),
            )
        )
        .alias("reason")
    )
    runs = contender.runs.with_columns(bound, own_share.alias("_own"), base_share["base_share"].alias("_base"))
    runs = runs.with_columns(reason).drop("_own", "_base")
    judged = judge.judge_runs(runs, frame.drop("base_share", "pair_noise", "_unit"), min_effect=min_effect)
    failed_there = pl.concat([b.failed_runs.select(SERIES) for b in bases]).unique()
    judged = judged.join(failed_there.with_columns(pl.lit(True).alias("_failed_there")), on=SERIES, how="left", maintain_order="left")
    judged = judged.with_columns(
        pl.when(pl.col("verdict") == "inconclusive")
        .then(pl.col("reason"))
        .when((pl.col("verdict") == "no baseline") & pl.col("baseline_value").is_null() & pl.col("_failed_there").fill_null(False))
        .then(pl.lit("failed in the baseline"))
        .when((pl.col("verdict") == "no baseline") & pl.col("baseline_value").is_null())
        .then(pl.lit("no run of this series in the baseline"))
        .when(pl.col("verdict") == "no baseline")
        .then(pl.lit("no direction known for this metric"))
        .alias("reason")
    ).drop("_failed_there")
    judged = judged.with_columns(
        pl.when(pl.col("verdict") == "inconclusive")
        .then(pl.col("reason").fill_null("unknown noise"))
        .otherwise(pl.col("reason"))
        .alias("reason")
    )
    failed = contender.failed_runs.join(frame.select(*SERIES, "baseline_value", "baseline_points"), on=SERIES, how="inner")
    failed = failed.with_columns(
        pl.lit(False).alias("launch_bound"), pl.lit("slower").alias("verdict"), pl.lit(judge.FAILED).alias("reason")
    )
    runs = pl.concat([judged, failed], how="diagonal_relaxed") if failed.height else judged
    return runs.rename({"value": "contender_value"})


def kernels_of(runs: pl.DataFrame, min_effect: float) -> pl.DataFrame:
    """Per kernel: the warehouse's own kernel rules (judge.judge_kernels, then judge.finish_kernels: failed runs,
    sweeps of few sizes)."""
    return judge.finish_kernels(judge.judge_kernels(runs, min_effect), runs, min_effect)
