"""The statistics read back on a small warehouse written here: `compare` in human units, the `compare` and
`sql` commands, and readers that never block a build."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from statistics_warehouse import BASELINES, fixture_runs, run, write_warehouse

from pipelines.__main__ import main
from pipelines.cli import cli_queries
from pipelines.core import settings
from pipelines.statistics import database_build, db

pytest_plugins = ["statistics_warehouse"]


# --- compare and the CLI ----------------------------------------------------------------------


def test_compare_in_human_units(warehouse_dir: Path) -> None:
    found = cli_queries.compare(warehouse_dir, "swiglu", "H100", metric="speed")
    assert len(found) == 8 * 2 + 2
    first = found[:3]  # seq 128, best first
    assert [(r["x_value"], r["provider"], r["value"], r["unit"], r["noise"]) for r in first] == [
        ("128", "liger", 1.0, "ms", "separated"),
        ("128", "huggingface", 1.25, "ms", "baseline"),
        ("128", "torch", 2.5, "ms", "separated"),
    ]
    assert [r["ratio"] for r in first] == pytest.approx([1.25, 1.0, 0.5])
    assert [r["x_value"] for r in found][-2:] == ["16384", "16384"], "workloads in numeric x order"
    memory = cli_queries.compare(warehouse_dir, "swiglu", "H100", metric="memory")
    assert [(r["provider"], r["value"], r["unit"], r["ratio"]) for r in memory] == [
        ("liger", 1.0, "MiB", 2.0),
        ("huggingface", 2.0, "MiB", 1.0),
    ]


def test_compare_provider_filter_keeps_the_baseline(warehouse_dir: Path) -> None:
    found = cli_queries.compare(warehouse_dir, "swiglu", "H100", pass_="forward", metric="speed", providers=["torch"])
    assert [(r["x_value"], r["provider"]) for r in found] == [
        ("128", "huggingface"),
        ("128", "torch"),
        ("256", "huggingface"),
        ("256", "torch"),
    ]
    assert cli_queries.compare(warehouse_dir, "swiglu", "H100", pass_="full") == []


def cli(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pipelines")
    subparsers = parser.add_subparsers(dest="command", required=True)
    cli_queries.add_sql_parser(subparsers)
    cli_queries.add_compare_parser(subparsers)
    return parser.parse_args(argv)


def test_compare_command_prints_workload_blocks(warehouse_dir: Path, capsys: pytest.CaptureFixture) -> None:
    args = cli("compare", "--kernel", "swiglu", "--gpu", "H100", "--metric", "speed", "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 0
    out = capsys.readouterr().out
    header, *blocks = out.split("\n\n")
    assert header.startswith("swiglu on H100:")
    first_block = blocks[0].splitlines()
    assert first_block[0] == "batch2-seq128  (forward, speed; seq = 128; unit ms)"
    assert first_block[1].split() == ["provider", "backend", "value", "p20..p80", "ratio", "vs", "noise", "version", "observed", "(UTC)"]
    assert first_block[3].split() == [
        "liger",
        "triton",
        "1",
        "1..1",
        "1.250",
        "huggingface/triton",
        "separated",
        "0.2",
        "2024-05-01",
        "00:00:00",
    ]
    assert first_block[4].split()[:7] == ["huggingface", "triton", "1.25", "1.25..1.25", "1.000", "itself", "baseline"]
    assert len(blocks) == 8, "one block per workload"


def test_compare_command_suggests_gpus(warehouse_dir: Path, capsys: pytest.CaptureFixture) -> None:
    args = cli("compare", "--kernel", "swiglu", "--gpu", "A100", "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 1
    assert "GPUs with swiglu: H100" in capsys.readouterr().err


def test_sql_command_formats(warehouse_dir: Path, capsys: pytest.CaptureFixture) -> None:
    query = "SELECT provider, ratio, separated FROM provider_comparisons WHERE run_id IN ('a-liger-2b', 'c-liger') ORDER BY run_id"
    args = cli("sql", query, "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 0
    assert capsys.readouterr().out.splitlines() == [
        "provider  ratio  separated",
        "--------  -----  ---------",
        "liger       1.8  true",
        "liger      NULL  NULL",
        "(2 rows)",
    ]
    args = cli("sql", query, "--format", "csv", "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 0
    assert capsys.readouterr().out.splitlines() == ["provider,ratio,separated", "liger,1.8,True", "liger,,"]
    args = cli("sql", query, "-f", "json", "--warehouse-dir", str(warehouse_dir))
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"provider": "liger", "ratio": pytest.approx(1.8), "separated": True},
        {"provider": "liger", "ratio": None, "separated": None},
    ]


def test_sql_command_reports_errors(warehouse_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["sql", "SELECT nope FROM runs", "--warehouse-dir", str(warehouse_dir)]) == 1
    assert "nope" in capsys.readouterr().err


def test_table_format_caps_rows() -> None:
    result = db.Result(columns=["n"], types=["INTEGER"], rows=[(i,) for i in range(5)])
    assert cli_queries.format_table(result, max_rows=2).splitlines()[-1] == ("(5 rows, 3 not shown: raise --max-rows or use --format csv)")


# --- readers never block a build -------------------------------------------------------------

SQL_IN_A_SUBPROCESS = """
import argparse, sys
from pipelines.cli import cli_queries
parser = argparse.ArgumentParser()
cli_queries.add_sql_parser(parser.add_subparsers())
args = parser.parse_args(sys.argv[1:])
sys.exit(args.func(args))
"""


def test_sql_works_while_a_build_is_running(warehouse_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    count_runs = "SELECT count(*) AS n FROM runs"
    before = len(fixture_runs())
    write_warehouse(warehouse_dir, [*fixture_runs(), run("liger", 70, run_id="new-run", x=("batch", 128))])

    building, release = threading.Event(), threading.Event()
    create_statistics = database_build._create_statistics

    def paused_create_statistics(con, baselines, reuse):
        building.set()
        assert release.wait(timeout=60)
        create_statistics(con, baselines, reuse)

    monkeypatch.setattr(database_build, "_create_statistics", paused_create_statistics)
    outcome: dict = {}

    def rebuild() -> None:
        try:
            outcome["counts"] = database_build.build_database(warehouse_dir, BASELINES)
        except BaseException as exc:  # handed to the test thread
            outcome["error"] = exc

    with db.open_readonly(warehouse_dir) as held:
        assert held.execute(count_runs).fetchone() == (before,)
        builder = threading.Thread(target=rebuild)
        builder.start()
        try:
            assert building.wait(timeout=60), "the build never started"
            # Mid-build: a reader in this process and the sql command in another both see the old database.
            assert db.query(warehouse_dir, count_runs).rows == [(before,)]
            sql_command = ["sql", count_runs, "--format", "csv", "--warehouse-dir", str(warehouse_dir)]
            command = subprocess.run(
                [sys.executable, "-c", SQL_IN_A_SUBPROCESS, *sql_command],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=settings.PROJECT_ROOT,
            )
            assert command.returncode == 0, command.stderr
            assert command.stdout.splitlines() == ["n", str(before)]
        finally:
            release.set()
            builder.join(timeout=120)
        assert "error" not in outcome, outcome.get("error")
        assert outcome["counts"]["runs"] == before + 1
        # The connection held through the swap still reads its (old) file.
        assert held.execute(count_runs).fetchone() == (before,)
    assert db.query(warehouse_dir, count_runs).rows == [(before + 1,)]
