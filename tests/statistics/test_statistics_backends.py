"""SPEC section 4's implementation, a provider and the backend its file was written for, through the statistics:
one kernel benchmarked by upstream's Triton file and its cuTile file, each with its own torch and liger, in the
same groups. The two ligers are two rows everywhere a provider is followed, each against its own baseline."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import UpstreamRepo, build_warehouse, liger_csv, liger_row
from statistics_warehouse import BASELINES, GEGLU, rows, run, two_file_runs, write_warehouse

from pipelines.__main__ import main
from pipelines.cli import cli_queries
from pipelines.statistics import database_build, db

pytest_plugins = ["statistics_warehouse"]

MS = 1_000_000


def comparisons(warehouse_dir: Path, seq: int) -> dict[tuple[str, str], dict]:
    """provider_comparisons of geglu's group at `seq`, keyed by (provider, backend)."""
    found = rows(warehouse_dir, "SELECT * FROM provider_comparisons WHERE kernel = 'geglu' AND workload_slug = ?", [f"hidden4096-seq{seq}"])
    return {(row["provider"], row["backend"]): row for row in found}


def test_each_liger_against_its_own_files_torch(two_file_warehouse: Path) -> None:
    group = comparisons(two_file_warehouse, 1024)
    assert set(group) == {("torch", "triton"), ("liger", "triton"), ("torch", "cutile"), ("liger", "cutile")}
    triton, cutile = group["liger", "triton"], group["liger", "cutile"]
    assert (triton["baseline_provider"], triton["baseline_backend"], triton["baseline_value"]) == ("torch", "triton", 10 * MS)
    assert (cutile["baseline_provider"], cutile["baseline_backend"], cutile["baseline_value"]) == ("torch", "cutile", 12 * MS)
    assert (triton["ratio"], cutile["ratio"]) == (pytest.approx(2.0), pytest.approx(6.0))
    assert triton["baseline_run_id"] == group["torch", "triton"]["run_id"]
    assert cutile["baseline_run_id"] == group["torch", "cutile"]["run_id"]
    # Each torch is its own baseline: ratio 1, no separation test.
    for torch in (group["torch", "triton"], group["torch", "cutile"]):
        assert (torch["baseline_backend"], torch["ratio"], torch["separated"], torch["noise"]) == (torch["backend"], 1.0, None, "baseline")
    # One ranking over the group's four implementations.
    assert {key: row["rank"] for key, row in group.items()} == {
        ("liger", "cutile"): 1,
        ("liger", "triton"): 2,
        ("torch", "triton"): 3,
        ("torch", "cutile"): 4,
    }


def test_the_baseline_falls_back_to_triton_then_to_the_first_backend(two_file_warehouse: Path) -> None:
    no_cutile_torch = comparisons(two_file_warehouse, 2048)["liger", "cutile"]
    assert (no_cutile_torch["baseline_backend"], no_cutile_torch["ratio"]) == ("triton", pytest.approx(20 / 4))
    group = comparisons(two_file_warehouse, 4096)
    # No triton torch: of cutedsl and cutile, the name that sorts first.
    assert (group["liger", "triton"]["baseline_backend"], group["liger", "triton"]["ratio"]) == ("cutedsl", pytest.approx(44 / 22))
    assert (group["liger", "cutedsl"]["baseline_backend"], group["liger", "cutedsl"]["ratio"]) == ("cutedsl", pytest.approx(4.0))


def test_each_implementation_has_its_own_latest_run(tmp_path: Path) -> None:
    """A later run of the cuTile file's liger is not the Triton file's liger's latest."""
    later = {**GEGLU, "observed": "2026-07-01"}
    write_warehouse(tmp_path, [*two_file_runs(), run("liger", 3 * MS, x=("seq", 1024), backend="cutile", **later)])
    database_build.build_database(tmp_path, BASELINES)
    group = comparisons(tmp_path, 1024)
    assert group["liger", "cutile"]["value"] == 3 * MS
    assert group["liger", "triton"]["value"] == 5 * MS


def test_comparable_group_counts_implementations(two_file_warehouse: Path) -> None:
    found = rows(two_file_warehouse, "SELECT * FROM comparable_groups WHERE kernel = 'geglu' ORDER BY workload_slug")
    by_seq = {row["workload_slug"]: row for row in found}
    group = by_seq["hidden4096-seq1024"]
    assert (group["n_runs"], group["n_providers"], group["n_implementations"]) == (4, 2, 4)
    assert (group["baseline_provider"], group["best_provider"], group["best_backend"]) == ("torch", "liger", "cutile")
    assert (group["best_value"], group["best_ratio"], group["best_baseline_backend"]) == (2 * MS, pytest.approx(6.0), "cutile")
    fallback = by_seq["hidden4096-seq4096"]
    assert (fallback["best_backend"], fallback["best_ratio"], fallback["best_baseline_backend"]) == (
        "cutedsl",
        pytest.approx(4.0),
        "cutedsl",
    )


def test_the_scorecard_and_the_sweeps_separate_the_two_ligers(two_file_warehouse: Path) -> None:
    card = {
        (r["provider"], r["backend"], r["baseline_provider"], r["baseline_backend"]): (r["n_groups"], r["geomean_ratio"], r["wins"])
        for r in rows(two_file_warehouse, "SELECT * FROM kernel_scorecard WHERE kernel = 'geglu'")
    }
    assert card == {
        ("liger", "triton", "torch", "triton"): (2, pytest.approx(2.0), 2),
        ("liger", "triton", "torch", "cutedsl"): (1, pytest.approx(2.0), 1),
        ("liger", "cutile", "torch", "cutile"): (1, pytest.approx(6.0), 1),
        ("liger", "cutile", "torch", "triton"): (1, pytest.approx(5.0), 1),
        ("liger", "cutedsl", "torch", "cutedsl"): (1, pytest.approx(4.0), 1),
    }, "no row mixes the cuTile liger with the Triton one, nor a torch with itself"
    sweeps = {
        (r["provider"], r["backend"], r["baseline_backend"]): (r["x_values"], r["ratios"])
        for r in rows(two_file_warehouse, "SELECT * FROM sweep_comparisons WHERE kernel = 'geglu'")
    }
    assert sweeps["liger", "triton", "triton"] == (["1024", "2048"], pytest.approx([2.0, 2.0]))
    assert sweeps["liger", "cutile", "cutile"] == (["1024"], pytest.approx([6.0]))
    assert len(sweeps) == 5


def test_run_noise_and_readable_runs_name_the_backend(two_file_warehouse: Path) -> None:
    noise = rows(
        two_file_warehouse,
        "SELECT DISTINCT provider, backend FROM run_noise WHERE group_id IN (SELECT group_id FROM runs WHERE kernel = 'geglu')",
    )
    assert {(r["provider"], r["backend"]) for r in noise} == {(p, b) for p in ("torch", "liger") for b in ("triton", "cutile", "cutedsl")}
    readable = rows(two_file_warehouse, "SELECT backend, benchmarked_commit, release FROM readable_runs WHERE kernel = 'geglu'")
    assert {r["backend"] for r in readable} == {"triton", "cutile", "cutedsl"}
    assert {(r["benchmarked_commit"], r["release"]) for r in readable} == {(None, None)}, "no run here came from the CI stream"


def test_checks_and_previews_hold_with_two_backends(two_file_warehouse: Path) -> None:
    outcomes = db.run_checks(two_file_warehouse)
    assert all(o.passed for o in outcomes), [o for o in outcomes if not o.passed]
    with db.session(two_file_warehouse) as reader:
        for table in ("provider_comparisons", "kernel_scorecard", "sweep_comparisons", "comparable_groups", "run_noise"):
            preview = reader.preview(table)
            assert "backend" in preview.columns or "best_backend" in preview.columns, table


# --- compare ----------------------------------------------------------------------------------


def implementations(found: list[dict]) -> list[tuple]:
    return [(r["x_value"], r["provider"], r["backend"], r["baseline_provider"], r["baseline_backend"]) for r in found]


def test_compare_shows_both_ligers_each_with_its_baseline(two_file_warehouse: Path) -> None:
    found = cli_queries.compare(two_file_warehouse, "geglu", "B200")
    assert implementations(found)[:4] == [
        ("1024", "liger", "cutile", "torch", "cutile"),
        ("1024", "liger", "triton", "torch", "triton"),
        ("1024", "torch", "triton", "torch", "triton"),
        ("1024", "torch", "cutile", "torch", "cutile"),
    ]
    assert [r["ratio"] for r in found[:4]] == pytest.approx([6.0, 2.0, 1.0, 1.0])
    assert len(found) == 4 + 3 + 4


def test_compare_backend_filter_keeps_the_baselines_it_divides_by(two_file_warehouse: Path) -> None:
    found = cli_queries.compare(two_file_warehouse, "geglu", "B200", backends=["cutile"])
    assert implementations(found) == [
        ("1024", "liger", "cutile", "torch", "cutile"),
        ("1024", "torch", "cutile", "torch", "cutile"),
        ("2048", "liger", "cutile", "torch", "triton"),
        ("2048", "torch", "triton", "torch", "triton"),
        ("4096", "torch", "cutile", "torch", "cutile"),
    ]
    liger_triton = cli_queries.compare(two_file_warehouse, "geglu", "B200", providers=["liger"], backends=["triton"])
    assert [(x, p, b) for x, p, b, *_ in implementations(liger_triton)] == [
        ("1024", "liger", "triton"),
        ("1024", "torch", "triton"),
        ("2048", "liger", "triton"),
        ("2048", "torch", "triton"),
        ("4096", "liger", "triton"),
        ("4096", "torch", "cutedsl"),
    ]


def test_compare_command_names_each_ratios_baseline(two_file_warehouse: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["compare", "--kernel", "geglu", "--gpu", "B200", "--backend", "cutile", "--warehouse-dir", str(two_file_warehouse)]
    assert main(argv) == 0
    blocks = capsys.readouterr().out.split("\n\n")[1:]
    lines = [line.split() for line in blocks[1].splitlines()]  # seq 2048
    assert lines[0] == ["hidden4096-seq2048", "(forward,", "speed;", "seq", "=", "2048;", "unit", "ms)"]
    assert lines[3][:7] == ["liger", "cutile", "4", "4..4", "5.000", "torch/triton", "separated"]
    assert lines[4][:7] == ["torch", "triton", "20", "20..20", "1.000", "itself", "baseline"]


# --- from upstream's two files, through the ingest ----------------------------------------------


def test_two_files_of_one_commit_make_two_implementations(upstream_repo: UpstreamRepo, tmp_path: Path) -> None:
    """The backend comes from the file: the same provider names in the cuTile file are other implementations."""

    def rows_of(liger: str, torch: str, timestamp: str) -> str:
        return liger_csv(
            liger_row(provider="liger", y50=liger, y20=liger, y80=liger, timestamp=timestamp),
            liger_row(provider="torch", y50=torch, y20=torch, y80=torch, timestamp=timestamp),
        )

    upstream_repo.commit(
        {
            "benchmark/data/all_benchmark_data.csv": rows_of("0.5", "1.0", "2025-01-01 10:00:00"),
            "benchmark/data/all_benchmark_data_cutile.csv": rows_of("0.2", "1.2", "2025-01-02 10:00:00"),
        },
        "both files",
    )
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    database_build.build_database(warehouse, BASELINES)
    found = rows(warehouse, "SELECT * FROM provider_comparisons WHERE provider = 'liger' ORDER BY backend")
    assert [(r["backend"], r["baseline_provider"], r["baseline_backend"]) for r in found] == [
        ("cutile", "torch", "cutile"),
        ("triton", "torch", "triton"),
    ]
    assert [r["ratio"] for r in found] == pytest.approx([6.0, 2.0])
    assert len({r["group_id"] for r in found}) == 1, "one group: the file is not part of what makes runs comparable"
