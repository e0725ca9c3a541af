"""The verdict on upstream's real CI history (issue 24's Done-when): a rerun of a commit already in the history
passes, and the same file with one kernel's Triton `liger` speed made 20% slower fails on that kernel.

The rerun is `benchmarks/0a62700/benchmark.csv` (2025-11-28), a rerun of the release folder
`0a62700-v0.6.4` (2025-11-21) on the same GPU model. It is taken out of the history by building the warehouse
from a copy of the bundle whose branches stop where they stood when the rerun was published: `gh-pages` at the
commit before the one that added the folder (so `0a62700-v0.6.4` is the newest CI point of every series), `main`
at its last commit before then. Deleting the folder in a new commit would not do: a file's every content stays
in the history (SPEC section 7). The other rerun pair, `7644a0f-v0.7.0` and `7644a0f`, does not fit: both ran
on a host that made some small kernels (dyt, qwen2vl_mrope) twice as slow as the weeks around them, and the
verdict rightly calls that slower than the history.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from conftest import build_warehouse, git

from pipelines.__main__ import main
from pipelines.statistics import database_build

RERUN = "benchmarks/0a62700/benchmark.csv"
TWIN = "benchmarks/0a62700-v0.6.4/benchmark.csv"
SLOWED = "kl_div"  # a kernel whose Triton liger speed series are calm enough to see 20%

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def history_before_rerun(upstream_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(warehouse.duckdb's folder built from both streams as they stood before the rerun, the rerun's CSV)."""
    root = tmp_path_factory.mktemp("verdict-real")
    repo = root / "upstream.git"
    subprocess.run(["git", "clone", "--quiet", "--mirror", str(upstream_bundle), str(repo)], check=True)
    added = git(repo, "log", "--format=%H", "--diff-filter=A", "gh-pages", "--", RERUN).splitlines()[-1]
    published = git(repo, "show", "-s", "--format=%cI", added)
    git(repo, "update-ref", "refs/heads/gh-pages", f"{added}^")
    git(repo, "update-ref", "refs/heads/main", git(repo, "rev-list", "-1", f"--before={published}", "main"))
    assert git(repo, "ls-tree", "--name-only", "gh-pages", TWIN) == TWIN
    assert git(repo, "ls-tree", "--name-only", "gh-pages", RERUN) == ""
    contender = root / "rerun" / "benchmark.csv"
    contender.parent.mkdir()
    contender.write_bytes(subprocess.run(["git", "show", f"{added}:{RERUN}"], cwd=repo, capture_output=True, check=True).stdout)

    warehouse = build_warehouse(root / "warehouse", str(repo), root / "cache", streams=("data", "ci"))
    database_build.build_database(warehouse, ("huggingface", "torch"))
    return warehouse, contender


def judge(capsys, warehouse: Path, contender: Path) -> tuple[int, dict]:
    code = main(["verdict", str(contender), "--warehouse-dir", str(warehouse), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_rerun_of_a_commit_in_the_history_is_not_slower(capsys, history_before_rerun: tuple[Path, Path]) -> None:
    warehouse, contender = history_before_rerun
    code, document = judge(capsys, warehouse, contender)
    judged = [run for run in document["runs"] if run["verdict"] != "no baseline"]
    slower = [run for run in judged if run["verdict"] == "slower"]
    assert len(judged) >= 0.95 * len(document["runs"]) > 2000  # the contender's groups are the warehouse's
    assert len(slower) <= 0.01 * len(judged)
    assert [k for k in document["kernels"] if k["verdict"] == "slower"] == []
    assert code == 0


def test_one_kernel_made_20_percent_slower_fails_on_that_kernel(capsys, history_before_rerun: tuple[Path, Path], tmp_path: Path) -> None:
    warehouse, rerun = history_before_rerun
    with rerun.open(newline="") as handle:
        table = list(csv.reader(handle))
    column = {name: i for i, name in enumerate(table[0])}
    touched = 0
    for row in table[1:]:
        if (row[column["kernel_name"]], row[column["kernel_provider"]], row[column["metric_name"]]) == (SLOWED, "liger", "speed"):
            for quantile in ("y_value_50", "y_value_20", "y_value_80"):
                row[column[quantile]] = repr(float(row[column[quantile]]) * 1.2)
            touched += 1
    assert touched >= 15
    contender = tmp_path / "benchmark.csv"  # the Triton build's name: backend triton
    with contender.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(table)

    code, document = judge(capsys, warehouse, contender)
    assert code == 1
    slowed = [k for k in document["kernels"] if (k["kernel"], k["provider"], k["metric"]) == (SLOWED, "liger", "speed")]
    assert len(slowed) == 3  # forward, backward, full
    for found in slowed:
        assert found["backend"] == "triton" and found["verdict"] == "slower"
        assert found["slower"] > found["judged"] / 2
        assert found["geomean_ratio"] == pytest.approx(1 / 1.2, rel=0.05)
    others = [k for k in document["kernels"] if k["verdict"] == "slower" and k not in slowed]
    assert others == []
