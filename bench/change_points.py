"""`python -m bench.change_points [--bundle PATH]`: which change-point library, measured on upstream's CI history.

Reads every version of every `benchmarks/<commit>[-v<version>]/benchmark.csv` on the bundle's `gh-pages`
branch through git (87,256 distinct runs), makes the series of SPEC section 8 (kernel, pass, metric, GPU,
workload = config + x value, provider; in timestamp order; one point per distinct run), and runs each
library's segmentation on every series of NVIDIA H100 80GB HBM3 with at least MIN_POINTS points, each
followed by the same persistence rule (pipelines.series.change_points) and each with the same noise
(pipelines.series.series_noise). It prints per library:

- known steps: the steps found by looking at the history (KNOWN_STEPS, every x value of each) reported
  at the right commit (the first run after the shift is that folder's) and in the right direction;
- between reruns: change points between two runs of one commit (0a62700-v0.6.4 and 0a62700, 7644a0f-v0.7.0
  and 7644a0f): no code changed there, so each is false or the host's (its cause would say which);
- spikes: change points on the series that only spike (spike_only: some points leave the level by more
  than 15% for one or two runs and come back, the level itself moves less than 3%), raw (the library's own
  boundaries) and after the persistence rule;
- the seconds of segmentation over all series (the persistence rule's own time apart).

`python -m bench.change_points --census WAREHOUSE_DIR [--sample N]` counts a built warehouse.duckdb's own
change_points instead (issue 28's before / after): how many, by status (confirmed / candidate), by
below_min_effect and verdict; the spike pairs (a change point followed in its series by one of the other
direction with at most 3 runs between them that returns within 5%: a spike reported as a regression and an
improvement with no link), as a share of the regressions; and N regressions of at least the minimum effect
drawn at random (seed 0) with their series' commits around the step, to judge by hand whether each is a
real lasting step. A warehouse built before the status columns is counted too.

The libraries not installed are skipped with the command that installs them: signal-processing-algorithms
and apache-otava cannot be pinned beside the project's numpy (see docs/statistics.md), so measure them in a
separate virtual environment: `pip install --no-deps signal-processing-algorithms==2.1.6 apache-otava==0.8.0
more-itertools structlog` beside ruptures, numpy and scipy.
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import math
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pipelines.core import settings
from pipelines.series import change_points
from pipelines.series import series_noise as noise

BUNDLE = settings.PROJECT_ROOT.parent / "shared" / "liger-data" / "liger-upstream.bundle"
GPU = "NVIDIA H100 80GB HBM3"
MIN_POINTS = 20
# Steps found by looking at the history (print the series: every x value of the config moves together).
# (kernel, pass, metric, provider, config, x values or None for all) -> (folder of the first run after the
# step, verdict): dpo_loss's liger forward 11% slower from 1c07943 (huggingface flat), tvd's liger 14% faster
# from e6f84b8 (two points after, the newest), embedding's huggingface forward 2.4x-3.4x faster from
# 1c07943, layer_norm's huggingface forward 3-5% faster from 1c07943 except x=4096, 2.5% slower; and two
# regressions that lasted three runs (7644a0f-v0.7.0, its rerun 7644a0f, 9c1ddb7) and were gone at 5057ca8:
# embedding's liger forward at x=1024 (2.3x slower) and layer_norm's liger forward at x=1024 (5x slower).
DPO = '{"T": 512, "H": 1024, "V": 128256, "mode": "forward", "dtype": "torch.bfloat16", "bias": true, "beta": 0.1, "ignore_index": 42}'
LAYER_NORM = '{"M": 4096, "dtype": "torch.float32", "eps": 1e-06}'
EMBEDDING = '{"B": 32, "T": 512, "D": 768, "dtype": "torch.float32"}'
KNOWN_STEPS = [
    (("dpo_loss", "forward", "speed", "liger", DPO, None), ("1c07943", "regressed")),
    (("tvd", "full", "speed", "liger", '{"B": 8, "T": 2048}', None), ("e6f84b8", "improved")),
    (
        ("embedding", "forward", "speed", "huggingface", '{"B": 32, "T": 512, "D": 768, "dtype": "torch.float32"}', None),
        ("1c07943", "improved"),
    ),
    (("layer_norm", "forward", "speed", "huggingface", LAYER_NORM, {"1024", "2048", "8192", "16384"}), ("1c07943", "improved")),
    (("layer_norm", "forward", "speed", "huggingface", LAYER_NORM, {"4096"}), ("1c07943", "regressed")),
    (("embedding", "forward", "speed", "liger", EMBEDDING, {"1024"}), ("7644a0f-v0.7.0", "regressed")),
    (("embedding", "forward", "speed", "liger", EMBEDDING, {"1024"}), ("5057ca8", "improved")),
    (("layer_norm", "forward", "speed", "liger", LAYER_NORM, {"1024"}), ("7644a0f-v0.7.0", "regressed")),
    (("layer_norm", "forward", "speed", "liger", LAYER_NORM, {"1024"}), ("5057ca8", "improved")),
]
# ruptures' penalties measured beside the chosen one (PENALTY_PER_LOG_N), in multiples of ln n.
PENALTIES = (3.0, 8.0, change_points.PENALTY_PER_LOG_N)
# A spike: a point more than this far (ln) from the median of the seven around it.
SPIKE_LN = 0.15
# A level that moves less than this (ln of the running median's range) has no step worth a report.
FLAT_LN = 0.03

Point = tuple[str, str, float]  # (timestamp, folder, value)


def ci_series(bundle: Path) -> dict[tuple, list[Point]]:
    """Every CI series of the bundle's gh-pages: key (kernel, pass, metric, gpu, config, x_name, x_value, provider)."""
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder) / "liger"
        subprocess.run(["git", "clone", "--quiet", "--branch", "gh-pages", "--single-branch", str(bundle), str(repo)], check=True)

        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, text=True).stdout

        blobs: dict[str, str] = {}
        for commit in git("rev-list", "HEAD").split():
            for line in git("ls-tree", "-r", commit, "benchmarks").splitlines():
                meta, path = line.split("\t")
                if path.endswith("/benchmark.csv"):
                    blobs.setdefault(meta.split()[2], path.split("/")[1])
        runs: dict[tuple, tuple[str, float]] = {}
        for blob, folder_name in blobs.items():
            for row in csv.DictReader(io.StringIO(git("cat-file", "blob", blob))):
                key = tuple(
                    row[c]
                    for c in (
                        "kernel_name",
                        "kernel_operation_mode",
                        "metric_name",
                        "gpu_name",
                        "extra_benchmark_config_str",
                        "x_name",
                        "x_value",
                        "kernel_provider",
                        "timestamp",
                    )
                )
                try:
                    value = float(row["y_value_50"])
                except ValueError:
                    continue
                if value > 0:
                    runs.setdefault(key, (folder_name, value))
    series: dict[tuple, list[Point]] = defaultdict(list)
    for key, (folder_name, value) in runs.items():
        series[key[:8]].append((key[8], folder_name, value))
    return {key: sorted(points) for key, points in series.items()}


def known_steps(key: tuple) -> list[tuple[str, str]]:
    """The (folder, verdict) of each known step of a series."""
    return [
        expected
        for (kernel, pass_, metric, provider, config, xs), expected in KNOWN_STEPS
        if (key[0], key[1], key[2], key[7], key[4]) == (kernel, pass_, metric, provider, config) and (xs is None or key[6] in xs)
    ]


def commit_of(folder: str) -> str:
    return folder.split("-v")[0]


def spike_only(values: list[float]) -> bool:
    """Some runs leave the level and come back within two runs, and the level barely moves (see the module)."""
    logs = np.log(values)
    n = len(logs)
    level = np.array([np.median(logs[max(0, i - 3) : i + 4]) for i in range(n)])
    away = np.abs(logs - level) > SPIKE_LN
    longest, run = 0, 0
    for flag in away:
        run = run + 1 if flag else 0
        longest = max(longest, run)
    return 0 < longest <= 2 and level.max() - level.min() < FLAT_LN and not away[0] and not away[-2:].any()


def segmenters() -> dict[str, Callable[[np.ndarray], list[int]] | str]:
    """Each library's segmentation (starts of segments), or why it is not here."""
    found: dict[str, Callable[[np.ndarray], list[int]] | str] = {
        f"ruptures PELT l2, pen {penalty:g} ln n": functools.partial(change_points.ruptures_segments, penalty_per_log_n=penalty)
        for penalty in PENALTIES
    }
    try:
        from signal_processing_algorithms.energy_statistics import energy_statistics

        def e_divisive(scaled: np.ndarray) -> list[int]:
            np.random.seed(0)  # its permutation test draws from numpy's global generator
            return sorted(int(i) for i in energy_statistics.e_divisive(scaled, pvalue=0.01, permutations=100))

        found["signal-processing-algorithms E-divisive"] = e_divisive
    except ImportError:
        found["signal-processing-algorithms E-divisive"] = "not installed (pip install --no-deps signal-processing-algorithms==2.1.6)"
    try:
        from otava import analysis

        def otava(scaled: np.ndarray) -> list[int]:
            points, _ = analysis.compute_change_points(list(scaled), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
            return [int(p.index) for p in points]

        found["apache-otava E-divisive + t-test"] = otava
    except ImportError:
        found["apache-otava E-divisive + t-test"] = "not installed (pip install --no-deps apache-otava==0.8.0)"
    return found


def measure(series: dict[tuple, list[Point]]) -> dict[str, dict]:
    chosen = {k: v for k, v in series.items() if k[3] == GPU and len(v) >= MIN_POINTS}
    noises = noise.series_noises(
        (k, (k[0], k[1], k[2], k[3], k[7]), (k[2], k[3]), [math.log(p[2]) for p in v], [commit_of(p[1]) for p in v])
        for k, v in chosen.items()
    )
    known = [(k, expected) for k in chosen for expected in known_steps(k)]
    spiky = {k for k, v in chosen.items() if spike_only([p[2] for p in v])}
    results: dict[str, dict] = {}
    for name, segment in segmenters().items():
        if isinstance(segment, str):
            results[name] = {"skipped": segment}
            continue
        raw: dict[tuple, list[int]] = {}
        errors = 0
        started = time.perf_counter()
        for k, v in chosen.items():
            try:
                raw[k] = segment(np.log([p[2] for p in v]) / noises[k].noise)
            except Exception:  # a library's own failure on a real series is part of what is measured
                raw[k], errors = [], errors + 1
        segment_s = time.perf_counter() - started
        started = time.perf_counter()
        steps = {k: change_points.detect([p[2] for p in v], noises[k].noise, functools.partial(_given, raw[k])) for k, v in chosen.items()}
        rule_s = time.perf_counter() - started
        hits = sum(
            any(commit_of(chosen[k][s.after][1]) == commit_of(folder) and (s.ratio > 1) == (direction == "improved") for s in steps[k])
            for k, (folder, direction) in known
        )
        results[name] = {
            "series": len(chosen),
            "known_steps": f"{hits}/{len(known)}",
            "spike_series": len(spiky),
            "spike_raw_boundaries": sum(len(raw[k]) for k in spiky),
            "spike_change_points": sum(len(steps[k]) for k in spiky),
            "spike_series_with_change_points": sum(bool(steps[k]) for k in spiky),
            "between_reruns": sum(commit_of(chosen[k][s.before][1]) == commit_of(chosen[k][s.after][1]) for k in chosen for s in steps[k]),
            "change_points_all": sum(len(s) for s in steps.values()),
            "raw_boundaries_all": sum(len(r) for r in raw.values()),
            "errors": errors,
            "segment_s": round(segment_s, 2),
            "rule_s": round(rule_s, 2),
        }
    return results


def _given(boundaries: list[int], _scaled: np.ndarray) -> list[int]:
    return boundaries


# A spike pair: at most this many runs between the two change points, and back within this factor.
PAIR_RUNS = 3
PAIR_RETURN = 1.05


def census(database: Path, sample: int) -> list[str]:
    """The lines `--census` prints (see the module)."""
    import duckdb

    with duckdb.connect(str(database), read_only=True) as con:
        columns = {name for (name,) in con.sql("SELECT column_name FROM duckdb_columns() WHERE table_name = 'change_points'").fetchall()}
        status = "status" if "status" in columns else "'confirmed'"
        small = "below_min_effect" if "below_min_effect" in columns else "false"
        found = con.sql(
            f"SELECT group_id, provider, backend, kernel, pass, gpu_name, workload_slug, before_commit, after_commit, ratio, verdict,"
            f" n_after, after_run_id, {status} AS status, {small} AS small FROM change_points"
            " ORDER BY group_id, provider, backend, observed_at"
        ).fetchall()
        names = ["group_id", "provider", "backend", "kernel", "pass", "gpu_name", "workload_slug", "before_commit", "after_commit"]
        names += ["ratio", "verdict", "n_after", "after_run_id", "status", "small"]
        rows = [dict(zip(names, row, strict=True)) for row in found]
        lines = [f"change points {len(rows)}"]
        tally: dict[tuple, int] = defaultdict(int)
        for row in rows:
            tally[(row["status"], "below 5%" if row["small"] else "at least 5%", row["verdict"])] += 1
        lines += [f"  {' · '.join(key)}: {count}" for key, count in sorted(tally.items())]
        paired: set[int] = set()
        for i, (a, b) in enumerate(zip(rows, rows[1:])):
            same = [a[k] for k in ("group_id", "provider", "backend")] == [b[k] for k in ("group_id", "provider", "backend")]
            if (
                same
                and a["verdict"] != b["verdict"]
                and a["n_after"] <= PAIR_RUNS
                and abs(math.log(a["ratio"] * b["ratio"])) < math.log(PAIR_RETURN)
            ):
                paired |= {i, i + 1}
        regressions = [i for i, row in enumerate(rows) if row["verdict"] == "regressed"]
        in_pairs = sum(i in paired for i in regressions)
        lines.append(
            f"spike pairs {len(paired) // 2}; regressions in one {in_pairs} of {len(regressions)} ({in_pairs / max(len(regressions), 1):.0%})"
        )
        chosen = [rows[i] for i in regressions if not rows[i]["small"]]
        rng = np.random.default_rng(0)
        for row in [chosen[i] for i in sorted(rng.choice(len(chosen), size=min(sample, len(chosen)), replace=False))]:
            points = con.execute(
                'SELECT coalesce(runs.benchmarked_commit, left(s."commit", 8)) AS c, exp(median(ln(value))) FROM runs'
                " LEFT JOIN snapshots AS s ON runs.first_seen_snapshot = s.snapshot_id"
                " WHERE group_id = ? AND runs.provider = ? AND runs.backend = ? AND runs.status = 'passed' GROUP BY c ORDER BY min(runs.observed_at)",
                [row["group_id"], row["provider"], row["backend"]],
            ).fetchall()
            level = dict(points).get(row["before_commit"][:8] if len(row["before_commit"]) > 12 else row["before_commit"], None)
            shape = (
                " ".join(
                    ("|" if c == (row["after_commit"][:8] if len(row["after_commit"]) > 12 else row["after_commit"]) else "")
                    + f"{v / level:.2f}"
                    for c, v in points
                )
                if level
                else ""
            )
            lines.append(
                f"  {row['kernel']} {row['pass']} {row['provider']} {row['workload_slug']} {row['gpu_name']} {row['before_commit'][:12]}"
                f"->{row['after_commit'][:12]} {row['ratio']:.3f} {row['status']}: {shape}"
            )
        return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.change_points", description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=BUNDLE, help="the upstream bundle with a gh-pages branch")
    parser.add_argument("--census", type=Path, help="count a built warehouse's change_points instead (its folder or warehouse.duckdb)")
    parser.add_argument("--sample", type=int, default=15, help="regressions to print for judging by hand (with --census)")
    args = parser.parse_args(argv)
    if args.census is not None:
        database = args.census / "warehouse.duckdb" if args.census.is_dir() else args.census
        if not database.is_file():
            raise SystemExit(f"{database} does not exist: pass --census with a built warehouse folder or its warehouse.duckdb")
        print("\n".join(census(database, args.sample)))
        return
    if not args.bundle.is_file():
        raise SystemExit(f"{args.bundle} does not exist: pass --bundle with the upstream bundle (liger-upstream.bundle)")
    for name, figures in measure(ci_series(args.bundle)).items():
        print(f"{name}: " + ", ".join(f"{key} {value}" for key, value in figures.items()))


if __name__ == "__main__":
    main()
