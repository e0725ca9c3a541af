"""A contender judged against the warehouse (SPEC section 9), read-only: one session of warehouse.duckdb."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.core import sql_files
from pipelines.duck import db
from pipelines.verdict import judge, noise
from pipelines.verdict.contender import Contender, read_contender
from pipelines.verdict.holds import history_holds
from pipelines.verdict.launch_bound import launch_bound

# A run's baseline: its series' latest BASELINE_POINTS passed runs (their median, their range).
BASELINE_POINTS = 3
RUN_COLUMNS = (
    "kernel",
    "pass",
    "metric",
    "gpu_name",
    "workload_slug",
    "provider",
    "backend",
    "baseline_value",
    "contender_value",
    "ratio",
    "verdict",
    "unit",
    "baseline_points",
    "noise",
    "noise_method",
    "run_id",
)


@dataclass(frozen=True)
class Verdict:
    contender: Contender
    warehouse_dir: Path
    runs: pl.DataFrame  # RUN_COLUMNS and what judged them (baseline_low, baseline_high, outside, spread), one row per run
    kernels: pl.DataFrame  # judge.KERNELS
    noise_source: str  # where the series' noise comes from: the statistic `series_noise`
    # (gpu_name, backend) pairs holding history of the contender's kernels.
    history: list[tuple[str, str]] = field(default_factory=list)
    # What the history holds of the contender's kernels on its GPUs (pairwise.history_holds), for `no baseline` lines.
    holds: pl.DataFrame | None = None
    min_effect: float = judge.MIN_EFFECT

    @property
    def verdict(self) -> str:
        """`slower` when any kernel is, else `faster`, `same`, `inconclusive`, or `no baseline` (judge.overall)."""
        return judge.overall(self.kernels)

    @property
    def exit_code(self) -> int:
        """0 judged and no kernel slower, 1 some kernel slower, 3 nothing could be judged (judge.EXIT_CODES)."""
        return judge.EXIT_CODES[self.verdict]

    def messages(self) -> list[str]:
        """What a reader must know beside the tables: GPUs with no history, rows left out."""
        lines = []
        c = self.contender
        gpus = sorted({gpu for gpu, _ in self.history})
        for gpu in c.gpus:
            if gpu not in gpus:
                where = f"the warehouse has it on {', '.join(gpus)}" if gpus else "the warehouse has none on any GPU"
                lines.append(f"no baseline on {gpu}: no history of these kernels on that GPU ({where}); runs are never judged across GPUs")
        backends = sorted({backend for gpu, backend in self.history if gpu in c.gpus})
        for backend in sorted(set(c.runs["backend"].to_list())):
            if backends and backend not in backends:
                lines.append(
                    f"no history of backend {backend!r} (from the file name {c.path.name}: benchmark.csv and "
                    f"all_benchmark_data.csv are triton) on these GPUs; it has {', '.join(backends)}: give --backend"
                )
        if c.other_gpus:
            lines.append(f"--gpu left out the runs on {', '.join(c.other_gpus)}")
        if c.failed:
            lines.append(f"{c.failed} run(s) without a median (failed upstream) are not judged")
        if c.quarantined:
            lines.append(f"{c.quarantined} row(s) the warehouse would quarantine are not judged; the first: {c.quarantine_reason}")
        return lines


def judge_contender(
    warehouse_dir: Path, csv: Path, gpu: str | None = None, backend: str | None = None, min_effect: float = judge.MIN_EFFECT
) -> Verdict:
    """Read the contender, then judge it in one read-only session of warehouse.duckdb (nothing is written)."""
    contender = read_contender(Path(csv), backend=backend, gpu=gpu)
    with db.session(Path(warehouse_dir)) as session:
        series = contender.runs.select("group_id", "provider", "backend", "kernel", "pass", "metric", "gpu_name").unique()
        session.con.register("contender_series", series.to_arrow())
        session.con.register("contender_runs", contender.runs.select("run_id").to_arrow())
        baselines = _frame(session.query(sql_files.text("verdict/baselines"), {"points": BASELINE_POINTS}))
        noise_frame = noise.series_noise(session)
        history = session.query(sql_files.text("verdict/history")).rows
        holds = history_holds(session)
    own = contender.runs.with_columns(launch_bound(contender.runs))
    runs = judge.judge_runs(own, _typed(baselines), noise_frame, min_effect=min_effect).rename({"value": "contender_value"})
    judged = pl.col("verdict").is_in(["slower", "faster", "same"])
    kernels = judge.judge_kernels(runs.with_columns(pl.when(judged).then(pl.col("ratio")).alias("ratio")))
    return Verdict(
        contender=contender,
        warehouse_dir=Path(warehouse_dir),
        runs=runs,
        kernels=judge.contract_kernels(kernels, runs, min_effect),
        noise_source="series_noise",
        history=[(gpu, backend) for gpu, backend in history],
        holds=holds,
        min_effect=min_effect,
    )


def _frame(result: db.Result) -> pl.DataFrame:
    return pl.DataFrame(result.rows, schema=result.columns, orient="row")


def _typed(baselines: pl.DataFrame) -> pl.DataFrame:
    schema = {
        "group_id": pl.String,
        "provider": pl.String,
        "backend": pl.String,
        "baseline_value": pl.Float64,
        "baseline_low": pl.Float64,
        "baseline_high": pl.Float64,
        "baseline_points": pl.Int64,
    }
    if baselines.is_empty():
        return pl.DataFrame(schema=schema)
    return baselines.select(pl.col(name).cast(dtype) for name, dtype in schema.items())
