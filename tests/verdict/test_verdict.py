"""`python -m pipelines verdict` on a small warehouse built from a real git history (SPEC section 9): formats,
exit codes, GPUs without history, bad input, and nothing written."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from conftest import UpstreamRepo, build_warehouse, liger_csv, liger_row

from pipelines.__main__ import main
from pipelines.defs.resources import Warehouse
from pipelines.defs.verdict.jobs import verdict_job
from pipelines.statistics import database_build
from pipelines.verdict import judge
from pipelines.verdict.against_history import BASELINE_POINTS

GPU = "NVIDIA A100-SXM4-80GB"
OTHER_GPU = "NVIDIA H100 80GB HBM3"
SHAPES = (1024, 2048, 4096, 8192, 16384, 32768)
BASE_MS = {"liger": 0.5, "torch": 1.0}
DATA = "benchmark/data/all_benchmark_data.csv"


def wobble(commit: int, shape: int, provider: str) -> float:
    """A run's deterministic noise: about 1%, different at every commit, shape and provider."""
    return 1 + 0.01 * math.sin(commit * 2.3 + shape / 997 + len(provider))


def rows(day: str, values: dict[tuple[str, int], float], gpu: str = GPU) -> list[str]:
    lines = []
    for (provider, shape), ms in values.items():
        lines.append(
            liger_row(
                provider=provider,
                x_value=str(shape),
                y50=f"{ms:.6f}",
                y20=f"{ms * 0.99:.6f}",
                y80=f"{ms * 1.01:.6f}",
                gpu=gpu,
                timestamp=f"{day} 10:00:00",
            )
        )
    return lines


def history_values(commit: int) -> dict[tuple[str, int], float]:
    return {(p, s): BASE_MS[p] * s / 1024 * wobble(commit, s, p) for p in BASE_MS for s in SHAPES}


def contender_values(factor: dict[tuple[str, int], float] | None = None) -> dict[tuple[str, int], float]:
    """A run of the code of the history's last commit (noise of its own), times `factor` per (provider, shape)."""
    factor = factor or {}
    return {key: value * factor.get(key, 1.0) for key, value in history_values(99).items()}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight commits of upstream's data file, each a new run of every (provider, shape) on one GPU."""
    root = tmp_path_factory.mktemp("verdict")
    repo = UpstreamRepo(root / "upstream")
    for commit in range(8):
        day = f"2025-01-{commit + 10:02d}"
        repo.commit({DATA: liger_csv(*rows(day, history_values(commit)))}, f"run {commit}", date=f"{day}T12:00:00+00:00")
    target = build_warehouse(root / "warehouse", str(repo.path), root / "cache")
    database_build.build_database(target, ("huggingface", "torch"))
    return target


def write_contender(folder: Path, values: dict, name: str = "benchmark.csv", gpu: str = GPU, day: str = "2025-02-01") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(liger_csv(*rows(day, values, gpu)))
    return path


def verdict(capsys, warehouse: Path, csv: Path, *extra: str) -> tuple[int, str, str]:
    code = main(["verdict", str(csv), "--warehouse-dir", str(warehouse), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys, warehouse: Path, csv: Path, *extra: str) -> tuple[int, dict]:
    code, out, _ = verdict(capsys, warehouse, csv, "--format", "json", *extra)
    return code, json.loads(out)


def kernel(document: dict, provider: str) -> dict:
    (found,) = [k for k in document["kernels"] if k["provider"] == provider]
    return found


def test_a_rerun_of_the_latest_code_is_the_same(capsys, warehouse: Path, tmp_path: Path) -> None:
    code, document = as_json(capsys, warehouse, write_contender(tmp_path, contender_values()))
    assert code == 0
    assert document["verdict"] == "same"
    assert {run["verdict"] for run in document["runs"]} == {"same"}
    run = document["runs"][0]
    for field in ("kernel", "pass", "metric", "gpu_name", "workload_slug", "provider", "backend", "baseline_value", "contender_value"):
        assert run[field] is not None, field
    assert run["backend"] == "triton" and run["unit"] == "ns" and run["baseline_points"] == BASELINE_POINTS
    assert run["ratio"] == pytest.approx(run["baseline_value"] / run["contender_value"])
    assert run["noise"] > 0 and run["noise_method"]


def test_a_provider_made_slower_at_every_shape_fails(capsys, warehouse: Path, tmp_path: Path) -> None:
    slower = contender_values({("liger", s): 1.3 for s in SHAPES})
    code, document = as_json(capsys, warehouse, write_contender(tmp_path, slower))
    assert code == 1
    liger, torch = kernel(document, "liger"), kernel(document, "torch")
    assert liger["verdict"] == "slower" and liger["slower"] == len(SHAPES)
    assert liger["geomean_ratio"] == pytest.approx(1 / 1.3, rel=0.03)
    assert torch["verdict"] == "same" and torch["slower"] == 0
    assert document["kernels"][0]["verdict"] == "slower"  # slower kernels first

    code, markdown, _ = verdict(capsys, warehouse, write_contender(tmp_path, slower), "--format", "markdown")
    assert code == 1
    assert markdown.startswith("### Benchmark verdict: SLOWER")
    slower_kernels, folded = markdown.index("1 slower kernel(s)"), markdown.index("<details>")
    assert slower_kernels < folded  # the slower kernels listed first, their runs and the rest folded
    assert "<summary>Slower runs (6)</summary>" in markdown[folded:]
    assert "| `rms_norm` | `forward` | `speed` | `torch` | same |" in markdown[folded:]

    code, text, _ = verdict(capsys, warehouse, write_contender(tmp_path, slower))
    assert code == 1 and text.startswith("SLOWER") and "Slower runs (6):" in text


def test_a_faster_provider_passes(capsys, warehouse: Path, tmp_path: Path) -> None:
    code, document = as_json(capsys, warehouse, write_contender(tmp_path, contender_values({("liger", s): 0.7 for s in SHAPES})))
    assert code == 0
    assert kernel(document, "liger")["verdict"] == "faster"
    assert document["verdict"] == "faster"


def test_one_slower_shape_does_not_fail_the_kernel(capsys, warehouse: Path, tmp_path: Path) -> None:
    code, document = as_json(capsys, warehouse, write_contender(tmp_path, contender_values({("liger", 4096): 2.0})))
    assert code == 0
    liger = kernel(document, "liger")
    assert liger["slower"] == 1 and liger["verdict"] == "same"
    (slow,) = [run for run in document["runs"] if run["verdict"] == "slower"]
    assert "-hidden4096-" in slow["workload_slug"]


def test_a_gpu_without_history_gets_no_baseline_and_names_the_gpus_that_have_it(capsys, warehouse: Path, tmp_path: Path) -> None:
    path = write_contender(tmp_path, contender_values({("liger", s): 3.0 for s in SHAPES}), gpu=OTHER_GPU)
    code, document = as_json(capsys, warehouse, path)
    assert code == 3  # nothing could be judged (issue 28: a gate that judged nothing does not pass)
    assert {run["verdict"] for run in document["runs"]} == {"no baseline"}
    assert {k["verdict"] for k in document["kernels"]} == {"no baseline"}
    assert all(run["baseline_value"] is None and run["ratio"] is None for run in document["runs"])
    (message,) = document["messages"]
    assert OTHER_GPU in message and GPU in message
    code, text, _ = verdict(capsys, warehouse, path)
    assert f"no baseline on {OTHER_GPU}" in text and GPU in text


def test_gpu_filters_the_contenders_runs(capsys, warehouse: Path, tmp_path: Path) -> None:
    path = tmp_path / "benchmark.csv"
    both = rows("2025-02-01", contender_values()) + rows("2025-02-01", contender_values(), gpu=OTHER_GPU)
    path.write_text(liger_csv(*both))
    code, document = as_json(capsys, warehouse, path, "--gpu", GPU)
    assert code == 0
    assert {run["gpu_name"] for run in document["runs"]} == {GPU}
    assert any(OTHER_GPU in m and "--gpu" in m for m in document["messages"])
    code, out, err = verdict(capsys, warehouse, path, "--gpu", "NVIDIA B200")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "NVIDIA B200" in err and GPU in err and OTHER_GPU in err


def test_the_backend_comes_from_the_file_name_unless_given(capsys, warehouse: Path, tmp_path: Path) -> None:
    path = write_contender(tmp_path, contender_values(), name="all_benchmark_data_cutile.csv")
    code, document = as_json(capsys, warehouse, path)
    assert code == 3  # nothing could be judged
    assert {run["backend"] for run in document["runs"]} == {"cutile"}
    assert {run["verdict"] for run in document["runs"]} == {"no baseline"}
    assert any("'cutile'" in m and "--backend" in m for m in document["messages"])
    code, document = as_json(capsys, warehouse, path, "--backend", "triton")
    assert {run["verdict"] for run in document["runs"]} == {"same"}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("", "empty"),
        ("a,b,c\n1,2,3\n", "lacks required column"),
        (liger_csv(), "header but no rows"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, warehouse: Path, tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path / "benchmark.csv"
    if content is not None:
        path.write_text(content)
    code, out, err = verdict(capsys, warehouse, path)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and expected in err and str(path) in err


def test_no_warehouse_exits_2(capsys, tmp_path: Path) -> None:
    code, out, err = verdict(capsys, tmp_path / "nowhere", write_contender(tmp_path, contender_values()))
    assert code == 2 and out == "" and err.count("\n") == 1 and "materialize" in err


def test_an_unknown_format_is_a_usage_error(capsys, warehouse: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        verdict(capsys, warehouse, write_contender(tmp_path, contender_values()), "--format", "yaml")
    assert exit_.value.code == 2


def _files(folder: Path) -> dict[str, tuple[int, float, str]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_nothing_is_written(capsys, warehouse: Path, tmp_path: Path) -> None:
    before = _files(warehouse)
    for fmt in ("text", "markdown", "json"):
        verdict(capsys, warehouse, write_contender(tmp_path, contender_values({("liger", 1024): 2.0})), "--format", fmt)
    assert _files(warehouse) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["benchmark.csv"]


def test_a_contender_already_in_the_warehouse_is_not_its_own_baseline(capsys, warehouse: Path, tmp_path: Path) -> None:
    """The history's last file judged as a contender: its own runs (same run ids) are left out of the baseline."""
    last = write_contender(tmp_path, history_values(7), day="2025-01-17")
    code, document = as_json(capsys, warehouse, last)
    assert code == 0
    assert all(run["baseline_points"] == BASELINE_POINTS for run in document["runs"])
    own = history_values(7)
    previous = sorted(history_values(c)[("liger", 1024)] for c in range(7 - BASELINE_POINTS, 7))
    run = next(r for r in document["runs"] if r["provider"] == "liger" and "-hidden1024-" in r["workload_slug"])
    expected = math.sqrt(previous[2] * previous[3])  # the median of six, in ln
    assert run["baseline_value"] == pytest.approx(expected * 1e6, abs=1)
    assert run["contender_value"] == pytest.approx(own[("liger", 1024)] * 1e6, abs=1)


def test_the_series_noise_table_is_used_once_there(capsys, warehouse: Path, tmp_path: Path) -> None:
    """With `series_noise` in warehouse.duckdb the verdict takes its noise: a noise of 50% cannot tell a 30% loss, so
    the kernel is `inconclusive` (never `same`), and with nothing judged the exit status is 3."""
    copy = tmp_path / "warehouse"
    copy.mkdir()
    for name in ("warehouse.duckdb",):
        (copy / name).write_bytes((warehouse / name).read_bytes())
    with duckdb.connect(str(copy / "warehouse.duckdb")) as con:
        con.execute(
            "CREATE OR REPLACE TABLE series_noise AS SELECT group_id, provider, backend, count(*) AS n_points, 0.5 AS noise, "
            "'test' AS method FROM runs GROUP BY ALL"
        )
    slower = write_contender(tmp_path / "contender", contender_values({("liger", s): 1.3 for s in SHAPES}))
    code, document = as_json(capsys, copy, slower)
    assert code == 3
    assert document["baseline"]["noise"] == "series_noise"
    assert {run["noise_method"] for run in document["runs"]} == {"test"}
    liger = kernel(document, "liger")
    assert liger["verdict"] == "inconclusive" and liger["reason"].startswith("noise too large")


def test_sign_test() -> None:
    assert judge.sign_test_p(5, 0) == pytest.approx(1 / 32)
    assert judge.sign_test_p(0, 0) == 1.0
    assert judge.sign_test_p(3, 3) == pytest.approx(42 / 64)


def test_small_kernels_need_every_run_slower() -> None:
    """Below SIGN_TEST_RUNS runs the sign test cannot reach its level: every run must be slower on its own; and
    a kernel is slower only by at least the minimum effect (5%)."""
    assert judge.kernel_verdict([-0.3, -0.3, -0.3], [0.01] * 3) == ("slower", None)
    assert judge.kernel_verdict([-0.3, -0.3, -0.001], [0.01] * 3)[0] == "same"
    assert judge.kernel_verdict([], []) == ("no baseline", None)
    # Many runs: the median must be out by RUN_Z spreads and by the minimum effect, and the sign test agree.
    assert judge.kernel_verdict([-0.08] * 20, [0.01] * 20)[0] == "slower"
    assert judge.kernel_verdict([-0.04] * 20, [0.01] * 20)[0] == "same"  # beyond the noise, below 5%
    assert judge.kernel_verdict([-0.04] * 20, [0.01] * 20, min_effect=0.02)[0] == "slower"
    assert judge.kernel_verdict([-0.02] * 20, [0.01] * 20)[0] == "same"
    assert judge.kernel_verdict([-0.08] * 11 + [0.08] * 9, [0.01] * 20)[0] == "same"
    # Shared with the baseline provider (relative effect ~0): the host, not the code.
    verdict, host = judge.kernel_verdict([-0.3] * 6, [0.01] * 6, [0.0] * 6)
    assert verdict == "same" and "host" in host


def test_verdict_job_logs_and_records_the_markdown(warehouse: Path, tmp_path: Path) -> None:
    path = write_contender(tmp_path, contender_values({("liger", s): 1.3 for s in SHAPES}))
    resource = Warehouse(
        warehouse_dir=str(warehouse), source="unused", branch="main", file_glob="*.csv", cache_dir=str(tmp_path), baselines=["torch"]
    )
    with dg.DagsterInstance.ephemeral() as instance:
        result = verdict_job.execute_in_process(
            run_config={"ops": {"judge_contender_csv": {"config": {"csv": str(path)}}}},
            resources={"warehouse": resource},
            instance=instance,
        )
        assert result.success
        assert result.output_for_node("judge_contender_csv") == "slower"
        (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
        metadata = output.event_specific_data.metadata
        assert metadata["slower_kernels"].value == 1
        assert metadata["markdown"].value.startswith("### Benchmark verdict: SLOWER")
        logs = instance.all_logs(result.run_id)
        assert any("<summary>Slower runs" in (e.user_message or "") for e in logs)
        failed = verdict_job.execute_in_process(
            run_config={"ops": {"judge_contender_csv": {"config": {"csv": str(tmp_path / "missing.csv")}}}},
            resources={"warehouse": resource},
            instance=instance,
            raise_on_error=False,
        )
        assert not failed.success


def test_a_warehouse_without_backends_cannot_judge(capsys, warehouse: Path, tmp_path: Path) -> None:
    """A warehouse.duckdb from before two streams (no runs.backend) gives no verdict (exit 2), never "slower"."""
    copy = tmp_path / "old"
    copy.mkdir()
    (copy / "warehouse.duckdb").write_bytes((warehouse / "warehouse.duckdb").read_bytes())
    with duckdb.connect(str(copy / "warehouse.duckdb")) as con:
        con.execute("ALTER TABLE runs DROP COLUMN backend")
    code, out, err = verdict(capsys, copy, write_contender(tmp_path / "c", contender_values()))
    assert code == 2 and out == "" and err.count("\n") == 1 and "materialize" in err


def test_rows_the_ingest_would_quarantine_or_failed_runs_are_named_not_judged(capsys, warehouse: Path, tmp_path: Path) -> None:
    """The contender goes through the ingest's careful reader too: a broken row is left out and said, as a failed run is."""
    path = write_contender(tmp_path, contender_values())
    failed = liger_row(provider="torch", x_value="65536", y50="nan", y20="", y80="", gpu=GPU, timestamp="2025-02-01 10:00:00")
    path.write_text(path.read_text() + "rms_norm,liger,forward,broken\n" + failed + "\n")
    code, document = as_json(capsys, warehouse, path)
    assert code == 0
    assert len(document["runs"]) == len(SHAPES) * len(BASE_MS)
    assert {run["verdict"] for run in document["runs"]} == {"same"}
    assert any(m.startswith("1 row(s) the warehouse would quarantine") for m in document["messages"])
    assert any(m.startswith("1 run(s) without a median") for m in document["messages"])
