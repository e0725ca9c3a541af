"""Inputs judged as they are (issue 28): a contender's backend from a known suffix of its file name (else Triton,
or `--backend`), a run that passed in the baseline and failed in the contender is a regression, and rows that
repeat a run with other values are named and left out, so the row order never decides the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import liger_csv, liger_row

from pipelines.__main__ import main
from pipelines.core.kernel_backends import backend_of, contender_backend
from pipelines.verdict import judge

GPU = "NVIDIA H200"
SIZES = (1024, 2048, 4096, 8192)
PASSES = ("forward", "backward", "full")
MS = {"liger": 0.25, "torch": 1.1}  # kl_div forward on an H200 at 1,024 tokens: both grow with the tokens


def row(provider: str, mode: str, size: int, ms: float | str, day: str) -> str:
    """One kl_div point; `ms` a string is written as the median as it is (`nan`: a failed run), no quantiles."""
    failed = isinstance(ms, str)
    return liger_row(
        "kl_div",
        provider,
        mode,
        x_name="BT",
        x_label="total tokens",
        x_value=str(size),
        y50=ms if failed else f"{ms:.6f}",
        y20="" if failed else f"{ms * 0.995:.6f}",
        y80="" if failed else f"{ms * 1.005:.6f}",
        config='{"vocab_size": 128256, "bsz": 1}',
        gpu=GPU,
        timestamp=f"{day} 10:00:00",
    )


def run_rows(day: str, factor: dict[tuple[str, str], float | str] | None = None, seed: int = 0) -> list[str]:
    """A sweep of kl_div per provider and pass, each point within ~1% of its line; `factor` per (provider, pass)
    multiplies it, or replaces the median (`nan`: a failed run)."""
    factor = factor or {}
    lines = []
    for provider, base in MS.items():
        for i, mode in enumerate(PASSES):
            for j, size in enumerate(SIZES):
                wobble = 1 + 0.004 * (((seed + 3 * i + 5 * j) % 5) - 2)
                change = factor.get((provider, mode), 1.0)
                value = change if isinstance(change, str) else base * (i + 1) * size / 1024 * wobble * change
                lines.append(row(provider, mode, size, value, day))
    return lines


def write(folder: Path, name: str, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(liger_csv(*lines))
    return path


def judge_json(capsys, contender: Path, *baselines: Path, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    args = ["verdict", str(contender), "--format", "json", "--warehouse-dir", "/nonexistent/warehouse", *extra]
    for base in baselines:
        args += ["--baseline", str(base)]
    code = main(args)
    out, _ = capsys.readouterr()
    return code, json.loads(out)


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    return write(tmp_path / "main", "benchmark.csv", run_rows("2026-12-01", seed=1))


@pytest.mark.parametrize(
    ("name", "backend"),
    [
        ("slow_kl.csv", "triton"),
        ("my_results.csv", "triton"),
        ("benchmark_pr1234.csv", "triton"),
        ("results-2026.csv", "triton"),
        ("benchmark.csv", "triton"),
        ("all_benchmark_data.csv", "triton"),
        ("all_benchmark_data_cutile.csv", "cutile"),
        ("all_benchmark_data_cutedsl.csv", "cutedsl"),
        ("branch_CuTile.csv", "cutile"),
        ("pr_cutedsl.csv", "cutedsl"),
    ],
)
def test_the_contenders_backend_is_a_known_suffix_else_triton(name: str, backend: str) -> None:
    assert contender_backend(name) == backend


def test_the_warehouses_own_file_names_keep_their_backends() -> None:
    """The ingest's backend_of is unchanged: upstream's names, CI files, and SPEC section 4's own suffix for others."""
    assert backend_of("benchmark/data/all_benchmark_data.csv", "data") == "triton"
    assert backend_of("benchmark/data/all_benchmark_data_cutile.csv", "data") == "cutile"
    assert backend_of("benchmarks/0a62700/benchmark.csv", "ci") == "triton"
    assert backend_of("runs/all_benchmark_data_newtarget.csv", "file") == "newtarget"


@pytest.mark.parametrize("name", ["slow_kl.csv", "my_results.csv", "benchmark_pr1234.csv", "results-2026.csv"])
def test_any_file_name_judges_a_kernel_made_2x_slower(capsys, tmp_path: Path, baseline: Path, name: str) -> None:
    contender = write(tmp_path / "branch", name, run_rows("2026-12-02", {("liger", "forward"): 2.0}))
    code, document = judge_json(capsys, contender, baseline)
    assert code == 1
    assert {r["backend"] for r in document["runs"]} == {"triton"}
    (slower,) = [k for k in document["kernels"] if k["verdict"] == "slower"]
    assert (slower["kernel"], slower["pass"], slower["provider"]) == ("kl_div", "forward", "liger")
    assert slower["geomean_ratio"] == pytest.approx(0.5, rel=0.02)


def test_a_cutile_file_pairs_only_with_cutile_unless_backend_is_given(capsys, tmp_path: Path, baseline: Path) -> None:
    contender = write(tmp_path / "branch", "all_benchmark_data_cutile.csv", run_rows("2026-12-02", {("liger", "forward"): 2.0}))
    code, document = judge_json(capsys, contender, baseline)
    assert code == 3  # nothing pairs: no pass, no failure
    assert {k["verdict"] for k in document["kernels"]} == {"no baseline"}
    assert document["headline"].startswith("NOTHING JUDGED (exit 3)")
    code, document = judge_json(capsys, contender, baseline, extra=("--backend", "triton"))
    assert code == 1


def test_a_run_that_failed_in_the_contender_is_slower(capsys, tmp_path: Path, baseline: Path) -> None:
    lines = run_rows("2026-12-02")
    # Half of liger's forward sizes failed (upstream writes `nan`): the other kernels pass.
    failed = [row("liger", "forward", size, "nan", "2026-12-02") for size in SIZES[2:]]
    kept = [line for line in lines if not any(f",forward,speed,ms,BT,total tokens,{s}," in line and ",liger," in line for s in SIZES[2:])]
    contender = write(tmp_path / "branch", "benchmark.csv", kept + failed)
    code, document = judge_json(capsys, contender, baseline)
    assert code == 1
    (slower,) = [k for k in document["kernels"] if k["verdict"] == "slower"]
    assert (slower["kernel"], slower["pass"], slower["provider"]) == ("kl_div", "forward", "liger")
    assert slower["reason"] == f"2 run(s) {judge.FAILED}"
    lost = [r for r in document["runs"] if r["reason"] == judge.FAILED]
    assert len(lost) == 2 and all(r["verdict"] == "slower" and r["contender_value"] is None for r in lost)
    assert all(r["baseline_value"] > 0 for r in lost)


def test_a_contender_whose_every_run_failed_is_slower_not_bad_input(capsys, tmp_path: Path, baseline: Path) -> None:
    every = {(p, m): "nan" for p in MS for m in PASSES}
    contender = write(tmp_path / "branch", "benchmark.csv", run_rows("2026-12-02", every))
    code, document = judge_json(capsys, contender, baseline)
    assert code == 1
    assert {k["verdict"] for k in document["kernels"]} == {"slower"}


def test_a_run_that_failed_in_the_baseline_has_no_baseline(capsys, tmp_path: Path) -> None:
    base = write(tmp_path / "main", "benchmark.csv", run_rows("2026-12-01", {("liger", "forward"): "nan"}, seed=1))
    contender = write(tmp_path / "branch", "benchmark.csv", run_rows("2026-12-02"))
    code, document = judge_json(capsys, contender, base)
    assert code == 0
    forward = [k for k in document["kernels"] if (k["pass"], k["provider"]) == ("forward", "liger")]
    assert [k["verdict"] for k in forward] == ["no baseline"]
    runs = [r for r in document["runs"] if (r["pass"], r["provider"]) == ("forward", "liger")]
    assert {r["reason"] for r in runs} == {"failed in the baseline"}


def _conflicted(lines: list[str], first: bool) -> list[str]:
    """`lines` with liger's forward 1,024 run written twice: once as measured, once 3x slower; the slower first or last."""
    index = next(i for i, line in enumerate(lines) if ",liger,forward," in line and ",BT,total tokens,1024," in line)
    fields = lines[index].split(",")
    fields[8:11] = [f"{float(v) * 3:.6f}" for v in fields[8:11]]  # median and quantiles: a valid row, other values
    other = ",".join(fields)
    twice = [other, lines[index]] if first else [lines[index], other]
    return lines[:index] + twice + lines[index + 1 :]


@pytest.mark.parametrize("where", ["contender", "baseline"])
def test_conflicting_rows_are_named_and_never_decide_by_their_order(capsys, tmp_path: Path, where: str) -> None:
    documents = []
    for first in (True, False):
        folder = tmp_path / f"order-{first}"
        base_lines, contender_lines = run_rows("2026-12-01", seed=1), run_rows("2026-12-02")
        if where == "contender":
            contender_lines = _conflicted(contender_lines, first)
        else:
            base_lines = _conflicted(base_lines, first)
        base = write(folder / "main", "benchmark.csv", base_lines)
        contender = write(folder / "branch", "benchmark.csv", contender_lines)
        code, document = judge_json(capsys, contender, base)
        assert code == 0
        documents.append(document)
        (message,) = [m for m in document["messages"] if "written twice with other values" in m]
        assert f"the {where} benchmark.csv" in message and "kl_div forward liger" in message
    runs = [[(r["run_id"].split("/", 4)[-1], r["verdict"], r["ratio"]) for r in d["runs"]] for d in documents]
    assert runs[0] == runs[1]
    assert [k["verdict"] for k in documents[0]["kernels"]] == [k["verdict"] for k in documents[1]["kernels"]]
    forward = [r for r in documents[0]["runs"] if (r["provider"], r["pass"]) == ("liger", "forward") and "tokens1024" in r["workload_slug"]]
    if where == "contender":
        assert forward == []  # the conflicting run is left out, not judged by whichever row came first
    else:
        assert [r["verdict"] for r in forward] == ["no baseline"]


def test_one_baseline_run_and_too_few_points_is_unknown_noise_not_same(capsys, tmp_path: Path) -> None:
    """One provider's four sizes against one baseline run: no second run, no pair of machines to measure, no
    warehouse: the noise is unknown, every run `inconclusive`, exit 3 (never a pass)."""
    only = [line for line in run_rows("2026-12-01", seed=1) if ",liger,forward," in line]
    base = write(tmp_path / "main", "benchmark.csv", only)
    contender = write(tmp_path / "branch", "benchmark.csv", [line for line in run_rows("2026-12-02") if ",liger,forward," in line])
    code, document = judge_json(capsys, contender, base)
    assert code == 3
    assert {r["verdict"] for r in document["runs"]} == {"inconclusive"}
    assert all(r["reason"].startswith("noise unknown") for r in document["runs"])
    assert document["headline"].startswith("NOTHING JUDGED (exit 3)") and "noise unknown" in document["headline"]


def test_a_missing_baseline_file_is_bad_input(capsys, tmp_path: Path, baseline: Path) -> None:
    contender = write(tmp_path / "branch", "benchmark.csv", run_rows("2026-12-02"))
    code = main(["verdict", str(contender), "--baseline", str(tmp_path / "nowhere.csv"), "--warehouse-dir", "/nonexistent/warehouse"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "nowhere.csv: no such file" in err
