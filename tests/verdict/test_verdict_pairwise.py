"""Branch against main on one machine (SPEC section 9, issue 28): `verdict CONTENDER --baseline BASE`, on the two
real H200 runs of upstream's scripts (../shared/liger-data/h200: the same code, two boots of one kind of machine).

run1 against run2 and back: no kernel slower (exit 0), and liger's small norm and softmax kernels, whose time
does not grow with the tokens, `inconclusive` as launch-bound. run1 with liger's Triton tvd speed made 30% slower
at every size: tvd slower (exit 1), nothing else. Launch-bound detection and the scoreboard are pure functions,
checked on sweeps of known shape too.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import SHARED, build_warehouse, require_real

from pipelines.__main__ import main
from pipelines.defs.resources import Warehouse
from pipelines.defs.verdict.jobs import verdict_job
from pipelines.statistics import database_build
from pipelines.verdict.contender import read_contender
from pipelines.verdict.launch_bound import launch_bound, work_share
from pipelines.verdict.scoreboard import scoreboard

H200 = SHARED / "liger-data" / "h200"
# Liger's kernels whose time on the H200 is launch and Python overhead at every size (1,024 to 8,192 tokens).
LAUNCH_BOUND = ("layer_norm", "group_norm", "softmax")
# Liger's kernels whose time grows with the work.
WORK_BOUND = ("cross_entropy", "tvd", "kl_div")


@pytest.fixture(scope="module")
def runs() -> tuple[Path, Path]:
    folder = require_real(H200)
    return folder / "run1.csv", folder / "run2.csv"


def judge(capsys, contender: Path, *baselines: Path, fmt: str = "json", extra: tuple[str, ...] = ()) -> tuple[int, str]:
    args = ["verdict", str(contender), "--format", fmt, "--warehouse-dir", "/nonexistent/warehouse", *extra]
    for base in baselines:
        args += ["--baseline", str(base)]
    code = main(args)
    return code, capsys.readouterr().out


def slowed(source: Path, target: Path, kernel: str | None, factor: float, provider: str | None = "liger") -> Path:
    """`source` with `provider`'s speed of `kernel` times `factor` at every size (median and quantiles); None for
    `kernel` or `provider`: every one."""
    with source.open(newline="") as handle:
        table = list(csv.reader(handle))
    column = {name: i for i, name in enumerate(table[0])}
    touched = 0
    for row in table[1:]:
        if (
            row[column["metric_name"]] == "speed"
            and kernel in (None, row[column["kernel_name"]])
            and provider in (None, row[column["kernel_provider"]])
        ):
            for quantile in ("y_value_50", "y_value_20", "y_value_80"):
                row[column[quantile]] = repr(float(row[column[quantile]]) * factor)
            touched += 1
    assert touched >= 12
    with target.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(table)
    return target


@pytest.mark.parametrize("order", ["run1 against run2", "run2 against run1"])
def test_two_runs_of_the_same_code_pass_and_launch_bound_kernels_are_inconclusive(capsys, runs: tuple[Path, Path], order: str) -> None:
    contender, baseline = runs if order == "run1 against run2" else runs[::-1]
    code, out = judge(capsys, contender, baseline)
    document = json.loads(out)
    assert code == 0 and document["exit_code"] == 0
    assert [k for k in document["kernels"] if k["verdict"] == "slower"] == []
    assert document["headline"].startswith("PASS (exit 0): no kernel slower")
    kernels = {(k["kernel"], k["pass"], k["metric"], k["provider"]): k for k in document["kernels"]}
    for kernel in LAUNCH_BOUND:
        found = kernels[(kernel, "full", "speed", "liger")]
        assert found["verdict"] == "inconclusive", kernel
        assert found["reason"].startswith("launch-bound"), found["reason"]
    for kernel in WORK_BOUND:
        assert kernels[(kernel, "full", "speed", "liger")]["verdict"] in ("same", "faster"), kernel
    runs_ = [r for r in document["runs"] if r["provider"] == "liger" and r["metric"] == "speed"]
    assert {r["launch_bound"] for r in runs_ if r["kernel"] in WORK_BOUND} == {False}
    assert {r["verdict"] for r in runs_ if r["kernel"] in LAUNCH_BOUND and r["pass"] == "full"} == {"inconclusive"}
    # Every judged kernel says the smallest change it could have seen; nothing unjudged is `same`.
    for k in document["kernels"]:
        if k["verdict"] in ("same", "faster"):
            assert 0.05 <= k["min_detectable"] < 0.5
        if k["verdict"] == "same":
            assert k["judged"] > 0
    # run1's kernels that run2 lacks (embedding, geglu, ...) pair with nothing.
    assert {k["verdict"] for k in document["kernels"] if k["kernel"] in ("embedding", "geglu", "swiglu", "jsd")} <= {"no baseline"}


def test_liger_tvd_made_30_percent_slower_fails_on_tvd_only(capsys, runs: tuple[Path, Path], tmp_path: Path) -> None:
    run1, run2 = runs
    contender = slowed(run1, tmp_path / "all_benchmark_data.csv", "tvd", 1.3)
    code, out = judge(capsys, contender, run2)
    document = json.loads(out)
    assert code == 1
    slower = [k for k in document["kernels"] if k["verdict"] == "slower"]
    assert {(k["kernel"], k["provider"], k["metric"], k["backend"]) for k in slower} == {("tvd", "liger", "speed", "triton")}
    assert {k["pass"] for k in slower} == {"forward", "backward", "full"}
    for k in slower:
        assert k["geomean_ratio"] == pytest.approx(1 / 1.3, rel=0.03)
    assert document["headline"].startswith("SLOWER (exit 1): 3 of ")
    assert "liger tvd speed on NVIDIA H200 (triton): " in document["headline"] and "full 1.30x slower" in document["headline"]

    code, text = judge(capsys, contender, run2, fmt="text")
    assert code == 1 and text.splitlines()[0].startswith("SLOWER (exit 1)")
    assert "== NVIDIA H200 (triton) ==" in text and "Slower kernels (3):" in text

    code, markdown = judge(capsys, contender, run2, fmt="markdown")
    first = markdown.splitlines()[0]
    assert code == 1 and first.startswith("### Benchmark verdict: SLOWER (exit 1)") and "`tvd`" in first
    heading = markdown.index("#### `NVIDIA H200` · `triton`")
    table = markdown.index("| kernel | pass | metric | provider | change | runs |")
    assert heading < table < markdown.index("<summary>Slower runs (12)</summary>")
    assert "<summary>The other " in markdown and "inconclusive" in markdown
    # Narrow: no row repeats the GPU or the backend, six columns.
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]
    assert rows and all("H200" not in row and "triton" not in row for row in rows)
    assert all(row.count(" | ") == 5 for row in rows if "\\|" not in row)


def test_liger_cross_entropy_made_30_percent_slower_fails_on_cross_entropy_only(capsys, runs: tuple[Path, Path], tmp_path: Path) -> None:
    """cross_entropy's liger speed moves 4-20% between two boots of the same code at its small sizes (run2 against
    run1: each pass 1-9% slower); made 30% slower at every size, each of its four passes is slower."""
    run1, run2 = runs
    contender = slowed(run1, tmp_path / "benchmark_pr1234.csv", "cross_entropy", 1.3)
    code, out = judge(capsys, contender, run2)
    document = json.loads(out)
    assert code == 1
    slower = [k for k in document["kernels"] if k["verdict"] == "slower"]
    assert {(k["kernel"], k["provider"], k["metric"], k["backend"]) for k in slower} == {("cross_entropy", "liger", "speed", "triton")}
    assert {k["pass"] for k in slower} == {"forward", "backward", "full", "no-grad-forward"}
    assert all(1 / 1.35 < k["geomean_ratio"] < 1 / 1.15 for k in slower)


def test_several_baseline_runs_make_their_spread_part_of_the_noise(capsys, runs: tuple[Path, Path], tmp_path: Path) -> None:
    run1, run2 = runs
    contender = slowed(run1, tmp_path / "all_benchmark_data.csv", "tvd", 1.3)
    code, out = judge(capsys, contender, run2, run1)
    document = json.loads(out)
    assert code == 1
    assert len(document["baselines"]) == 2
    tvd = [r for r in document["runs"] if r["kernel"] == "tvd" and r["provider"] == "liger" and r["metric"] == "speed"]
    assert {r["baseline_points"] for r in tvd} == {2}
    methods = {r["noise_method"] for r in document["runs"] if r["noise_method"]}
    assert "baselines" in methods
    # Where the two baseline runs disagree most (cross_entropy liger moves between boots), their spread is the noise.
    spread = [r for r in document["runs"] if r["noise_method"] == "baselines" and r["metric"] == "speed"]
    assert spread and all(r["noise"] > 0 for r in spread)


def test_min_effect_is_a_setting(capsys, runs: tuple[Path, Path], tmp_path: Path) -> None:
    run1, run2 = runs
    contender = slowed(run1, tmp_path / "all_benchmark_data.csv", "tvd", 1.3)
    code, out = judge(capsys, contender, run2, extra=("--min-effect", "40%"))
    assert code == 0 and json.loads(out)["baseline"]["min_effect"] == pytest.approx(0.4)
    with pytest.raises(SystemExit) as exit_:
        judge(capsys, contender, run2, extra=("--min-effect", "lots"))
    assert exit_.value.code == 2


def test_the_verdict_job_takes_baseline_csvs(runs: tuple[Path, Path], tmp_path: Path) -> None:
    run1, run2 = runs
    contender = slowed(run1, tmp_path / "all_benchmark_data.csv", "tvd", 1.3)
    resource = Warehouse(
        warehouse_dir=str(tmp_path / "no-warehouse"),
        source="unused",
        branch="main",
        file_glob="*.csv",
        cache_dir=str(tmp_path),
        baselines=["torch"],
    )
    config = {"ops": {"judge_contender_csv": {"config": {"csv": str(contender), "baselines": [str(run2)]}}}}
    with dg.DagsterInstance.ephemeral() as instance:
        result = verdict_job.execute_in_process(run_config=config, resources={"warehouse": resource}, instance=instance)
        assert result.success and result.output_for_node("judge_contender_csv") == "slower"
        (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
        metadata = output.event_specific_data.metadata
        assert metadata["exit_code"].value == 1 and metadata["slower_kernels"].value == 3
        assert metadata["markdown"].value.startswith("### Benchmark verdict: SLOWER (exit 1)")


def _sweep(times: list[float], kernel: str = "k", provider: str = "liger", xs: tuple[int, ...] = (1024, 2048, 4096, 8192)) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "kernel": kernel,
            "provider": provider,
            "backend": "triton",
            "pass": "full",
            "metric": "speed",
            "gpu_name": "G",
            "sweep_digest": "s",
            "x_name": "BT",
            "x_value": [str(x) for x in xs],
            "value": times,
            "unit": "ns",
        }
    )


def test_launch_bound_reads_the_sweeps_shape() -> None:
    flat = _sweep([690e3, 497e3, 641e3, 482e3], "group_norm")  # liger group_norm full on the H200: overhead at every size
    linear = _sweep([1.25e6, 2.16e6, 3.97e6, 7.66e6], "cross_entropy")  # liger cross_entropy full: grows with the tokens
    knee = _sweep([134e3, 131e3, 150e3, 268e3], "layer_norm", provider="torch")  # torch layer_norm full: overhead until the last size
    frame = pl.concat([flat, linear, knee])
    assert launch_bound(frame).to_list() == [True] * 4 + [False] * 4 + [True, True, True, False]
    shares = work_share(linear).to_list()
    assert all(0.7 < s <= 1 for s in shares) and shares == sorted(shares)
    # Too short a sweep, a memory figure or an x that is no number says nothing.
    assert launch_bound(_sweep([1.0, 1.0], xs=(1024, 8192))).to_list() == [False, False]
    assert launch_bound(_sweep([1.0, 1.0, 1.0], xs=(1024, 1536, 2048))).to_list() == [False] * 3
    assert launch_bound(flat.with_columns(pl.lit("bytes").alias("unit"))).to_list() == [False] * 4
    assert launch_bound(flat.with_columns(pl.lit("big").alias("x_value"))).to_list() == [False] * 4


def test_launch_bound_on_the_real_runs(runs: tuple[Path, Path]) -> None:
    for path in runs:
        contender = read_contender(path)
        frame = contender.runs.with_columns(launch_bound(contender.runs))
        liger = frame.filter((pl.col("provider") == "liger") & (pl.col("metric") == "speed"))
        for kernel in LAUNCH_BOUND:
            assert liger.filter((pl.col("kernel") == kernel) & (pl.col("pass") == "full"))["launch_bound"].sum() >= 3, (path.name, kernel)
        assert not liger.filter(pl.col("kernel").is_in(WORK_BOUND))["launch_bound"].any(), path.name
        # torch's layer_norm and softmax grow: at the largest size torch is bound by its work.
        torch = frame.filter((pl.col("provider") == "torch") & (pl.col("kernel") == "softmax") & (pl.col("pass") == "forward"))
        assert not torch["launch_bound"].any()


def test_the_scoreboard_of_one_run(runs: tuple[Path, Path]) -> None:
    board = scoreboard(read_contender(runs[0]).runs)
    row = board.filter((pl.col("kernel") == "tvd") & (pl.col("pass") == "forward") & (pl.col("metric") == "speed")).row(0, named=True)
    assert row["provider"] == "liger" and row["baseline_provider"] == "torch" and row["workloads"] == 4
    assert row["geomean_ratio"] == pytest.approx(2.58, rel=0.05)  # liger's tvd forward is ~2.6x faster than torch's
    rms = board.filter((pl.col("kernel") == "rms_norm") & (pl.col("metric") == "speed"))
    assert set(rms["baseline_provider"]) == {"huggingface"}  # the first of LIGER_BASELINES a kernel has
    assert not board.filter(pl.col("provider").is_in(["torch", "huggingface"])).height


@pytest.fixture(scope="module")
def upstream_warehouse(upstream_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """warehouse.duckdb built from both streams of the upstream bundle (its H200 history: CI runs of 2025)."""
    root = tmp_path_factory.mktemp("verdict-h200")
    warehouse = build_warehouse(root / "warehouse", str(upstream_bundle), root / "cache", streams=("data", "ci"))
    database_build.build_database(warehouse, ("huggingface", "torch"))
    return warehouse


@pytest.mark.slow
def test_a_contributors_run_against_the_warehouse_judges_nothing_and_says_why(
    capsys, runs: tuple[Path, Path], upstream_warehouse: Path
) -> None:
    """Today's scripts sweep other workloads than the H200 history holds: nothing pairs, exit 3, never a pass."""
    run1 = runs[0]
    code = main(["verdict", str(run1), "--warehouse-dir", str(upstream_warehouse)])
    text = capsys.readouterr().out
    assert code == 3
    first = text.splitlines()[0]
    assert first.startswith("NOTHING JUDGED (exit 3): none of ") and "no baseline" in first
    # The contender's own scoreboard still says how liger stands against torch in this run.
    assert "Scoreboard of the contender's own run" in text
    assert re.search(r"tvd\s+forward\s+speed\s+liger\s+torch\s+2\.\d\dx faster", text)
    # The history's H200 workloads are named, with their newest date and version.
    holds = [line for line in text.splitlines() if line.startswith("no baseline for ") and "on NVIDIA H200: the history holds" in line]
    held = [line for line in holds if "other workload(s)" in line]
    assert held and all("newest 2025-" in line and "version " in line for line in held)
    assert any(line.startswith("no baseline for cross_entropy on NVIDIA H200: the history holds 6 other workload(s)") for line in held)
    assert "no baseline for embedding on NVIDIA H200: the history holds no run of it on that GPU" in holds

    code = main(["verdict", str(run1), "--warehouse-dir", str(upstream_warehouse), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 3 and document["exit_code"] == 3
    assert {k["verdict"] for k in document["kernels"]} == {"no baseline"}
    assert document["scoreboard"] and document["history_holds"]


def test_a_host_6_percent_slower_on_every_provider_is_named_and_passes(capsys, runs: tuple[Path, Path], tmp_path: Path) -> None:
    """Every speed of run1 6% slower (a slower machine): beyond the minimum effect, but the baseline provider moved
    as much, so nothing that gates is slower, the host is named, and only the baseline providers are reported."""
    run1, run2 = runs
    contender = slowed(run1, tmp_path / "benchmark.csv", None, 1.06, provider=None)
    code, out = judge(capsys, contender, run2)
    document = json.loads(out)
    assert code == 0
    assert not [k for k in document["kernels"] if k["verdict"] == "slower" and k["gates"]]
    (host,) = [m for m in document["messages"] if m.startswith("the host is")]
    assert "~6" in host and "slower" in host and "speed" in host and "not counted against the branch" in host
    assert document["headline"].startswith("PASS (exit 0): no kernel")
