"""A contender judged against the warehouse (SPEC section 9), read-only: one session of warehouse.duckdb."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.core import sql_files
from pipelines.core.settings import DEFAULT_BASELINES
from pipelines.statistics import db
from pipelines.verdict import judge, level
from pipelines.verdict import verdict_noise as noise
from pipelines.verdict.contender import Contender, read_contender
from pipelines.verdict.holds import history_holds
from pipelines.verdict.launch_bound import launch_bound

# A run's baseline: the median of its series' newest points of the current segment (pipelines/verdict/level.py).
BASELINE_POINTS = level.LEVEL_POINTS
# A host change: at least this share of a GPU's kernels (every provider, HOST_MIN_KERNELS at least) moved the
# same way, and their median move is at least HOST_MIN_SHIFT.
HOST_SHARE = 0.75
HOST_MIN_KERNELS = 3
HOST_MIN_SHIFT = 0.01


@dataclass(frozen=True)
class Verdict:
    contender: Contender
    warehouse_dir: Path
    runs: pl.DataFrame  # render.RUN_FIELDS: each run and what judged it (baseline_low, baseline_high, outside, spread, relative_effect)
    kernels: pl.DataFrame  # judge.KERNELS
    noise_source: str  # where the series' noise comes from: the statistic `series_noise`
    # (gpu_name, backend) pairs holding history of the contender's kernels.
    history: list[tuple[str, str]] = field(default_factory=list)
    # What the history holds of the contender's kernels on its GPUs (pairwise.history_holds), for `no baseline` lines.
    holds: pl.DataFrame | None = None
    min_effect: float = judge.MIN_EFFECT

    @property
    def verdict(self) -> str:
        """`slower` when a kernel that gates is, else faster, same, inconclusive or no baseline (judge.overall)."""
        return judge.overall(self.kernels)

    @property
    def exit_code(self) -> int:
        """0 judged and no kernel slower; 1 a kernel that gates is slower; 3 nothing could be judged (every
        kernel `no baseline` or `inconclusive`). 2, bad input, never gets this far (BadContender)."""
        return judge.EXIT_CODES[self.verdict]

    def messages(self) -> list[str]:
        """What a reader must know beside the tables: a host change, slower baseline providers, GPUs with no
        history, rows left out."""
        lines = [*host_messages(self.kernels), *baseline_provider_messages(self.kernels)]
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


def host_messages(kernels: pl.DataFrame) -> list[str]:
    """Name a host change: on a GPU, most kernels of every provider moved the same way in one metric (see HOST_SHARE)."""
    lines = []
    moved = kernels.filter(pl.col("median_outside").is_not_null())
    # Per metric: a slower host moves every latency, not the memory a kernel allocates.
    for (gpu, metric), group in moved.group_by("gpu_name", "metric", maintain_order=True):
        effects = group["median_outside"].to_list()
        if len(effects) < HOST_MIN_KERNELS:
            continue
        shift = judge._median(effects)
        same_way = sum((e < 0) == (shift < 0) and e != 0 for e in effects)
        if abs(shift) >= math.log1p(HOST_MIN_SHIFT) and same_way >= HOST_SHARE * len(effects):
            word = "slower" if shift < 0 else "faster"
            providers = ", ".join(sorted(set(group["provider"].to_list())))
            lines.append(
                f"the host is ~{abs(math.exp(-shift) - 1):.1%} {word} on every provider on {gpu} ({metric}: {same_way} of {len(effects)} "
                f"kernels moved that way: {providers}); not counted against the branch"
            )
    for row in kernels.filter(pl.col("host").is_not_null()).iter_rows(named=True):
        lines.append(
            f"{row['kernel']} {row['pass']} {row['metric']} {row['provider']} ({row['backend']}) on {row['gpu_name']}: {row['host']}"
        )
    return lines


def baseline_provider_messages(kernels: pl.DataFrame) -> list[str]:
    """A slower baseline provider is reported, never failed."""
    slower = kernels.filter(~pl.col("gates") & (pl.col("verdict") == "slower"))
    if slower.is_empty():
        return []
    named = ", ".join(
        f"{r['provider']} {r['kernel']} {r['pass']} {r['metric']} ({_times(r['geomean_ratio'])})"
        for r in slower.head(8).iter_rows(named=True)
    )
    more = f" and {slower.height - 8} more" if slower.height > 8 else ""
    return [f"{slower.height} baseline provider kernel(s) slower: {named}{more}; a baseline provider is reported, not failed"]


def _times(ratio: float | None) -> str:
    return "failed" if ratio is None else f"{ratio:.2f}x"


def baselines_of(points: pl.DataFrame, starts: pl.DataFrame | None, series_noise: pl.DataFrame) -> pl.DataFrame:
    """The judge's baselines from a history's points (level.levels' input), the segments' starts and the
    series' noise (noise.SCHEMA)."""
    return noise.with_window(level.levels(points, starts), series_noise)


def judge_frames(
    contender_runs: pl.DataFrame,
    points: pl.DataFrame,
    starts: pl.DataFrame | None,
    series_noise: pl.DataFrame,
    min_effect: float = judge.MIN_EFFECT,
    baseline_providers: tuple[str, ...] = DEFAULT_BASELINES,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(runs, kernels): the contender's runs (contender.COLUMNS) judged against a history given as frames, the
    points of its series (level.levels' input), their segments' starts and noise (noise.SCHEMA). The one
    path from history to verdict: judge_contender reads the frames from warehouse.duckdb, `python -m
    bench.verdict` computes them on a history cut in memory, so the bench measures exactly this."""
    baselines = baselines_of(points, starts, series_noise)
    own = contender_runs.with_columns(launch_bound(contender_runs))
    runs = judge.judge_runs(own, baselines, min_effect, baseline_providers)
    kernels = judge.finish_kernels(judge.judge_kernels(runs, min_effect, baseline_providers), runs, min_effect)
    return runs, kernels


def judge_contender(
    warehouse_dir: Path,
    csv: Path,
    gpu: str | None = None,
    backend: str | None = None,
    min_effect: float = judge.MIN_EFFECT,
    baseline_providers: tuple[str, ...] = DEFAULT_BASELINES,
) -> Verdict:
    """Read the contender, then judge it in one read-only session of warehouse.duckdb (nothing is written)."""
    contender = read_contender(Path(csv), backend=backend, gpu=gpu)
    with db.session(Path(warehouse_dir)) as session:
        series = contender.runs.select("group_id", "provider", "backend", "kernel", "pass", "metric", "gpu_name").unique()
        session.con.register("contender_series", series.to_arrow())
        session.con.register("contender_runs", contender.runs.select("run_id").to_arrow())
        points = _frame(session.query(sql_files.text("verdict/points")))
        starts = _frame(session.query(sql_files.text("verdict/segments")))
        noise_frame = noise.series_noise(session)
        history = session.query(sql_files.text("verdict/history")).rows
        holds = history_holds(session)
    runs, kernels = judge_frames(
        contender.runs, _typed_points(points), starts if starts.height else None, noise_frame, min_effect, baseline_providers
    )
    return Verdict(
        contender=contender,
        warehouse_dir=Path(warehouse_dir),
        runs=runs.rename({"value": "contender_value"}),
        kernels=kernels,
        noise_source="series_noise",
        history=[(gpu, backend) for gpu, backend in history],
        holds=holds,
        min_effect=min_effect,
    )


def _frame(result: db.Result) -> pl.DataFrame:
    return pl.DataFrame(result.rows, schema=result.columns, orient="row")


def _typed_points(points: pl.DataFrame) -> pl.DataFrame:
    schema = {"group_id": pl.String, "provider": pl.String, "backend": pl.String, "value": pl.Float64, "commit": pl.String}
    if points.is_empty():
        return pl.DataFrame(schema={**schema, "order": pl.Datetime("us", "UTC")})
    return points.with_columns(pl.col(name).cast(dtype) for name, dtype in schema.items())
