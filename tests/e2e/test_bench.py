"""The benchmark runs end to end at a tiny size, and the streamed normalization (many small chunks and
buckets) gives exactly the tables the in-memory one (one chunk, one bucket) gives. No timing is asserted."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest
from conftest import git, liger_csv, liger_row
from polars.testing import assert_frame_equal

from bench import synthetic
from bench.report import TARGETS
from pipelines.assemble import assembly as tables
from pipelines.assemble import external_sort, run_identity
from pipelines.assemble.snapshot_history import History
from pipelines.assemble.tables_build import TABLE_NAMES, build_tables
from pipelines.core import schemas, settings
from pipelines.core.background import ahead
from pipelines.core.layout import Layout
from pipelines.core.settings import for_source
from pipelines.ingest.parse import fast as parse_fast
from pipelines.ingest.steps import stage_new, sync
from pipelines.statistics import database_build
from pipelines.storage import store

# Slow tier (the benchmark end to end, each phase a process of its own): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow

RATIOS = (
    "normalize_ratio",
    "normalize_peak_rss_mb",
    "materialize_ratio",
    "noop_ratio",
    "stats_ratio",
    "stats_output_ratio",
    "normalize_read_store_ratio",
    # Issue 17's target table: every figure a key.
    "normalize_vs_read_store_ratio",
    "ingest_ratio",
    # Issue 29's: the whole ingest against reading the CSV and storing every table's and statistic's rows alone.
    "ingest_vs_floors_ratio",
    "max_peak_rss_mb",
    "queries_ratio",
    "cost_ratio",
    # The change-point step of the build against reading the series and storing its two tables alone.
    "change_points_s",
    "change_points_floor_s",
    "change_points_ratio",
    # Issue 29: each growing phase's peak RSS at the largest size against the smallest.
    "normalize_rss_growth_ratio",
    "build_rss_growth_ratio",
)


def test_benchmark_runs_end_to_end_at_a_tiny_size(tmp_path, upstream_repo):
    upstream_repo.commit({"benchmark/data/all_benchmark_data.csv": liger_csv(liger_row(), liger_row(x_value="2048"))}, "data")
    # Two weeks of CI on gh-pages: the second folder is the one held back and added.
    git(upstream_repo.path, "switch", "--quiet", "--orphan", "gh-pages")
    for week, commit in enumerate(("aaa1111", "bbb2222")):
        ci = liger_csv(liger_row(gpu="NVIDIA H100 80GB HBM3", y50=f"0.{5 + week}", timestamp=f"2025-01-0{2 + week} 10:00:00"))
        upstream_repo.commit(
            {f"benchmarks/{commit}/benchmark.csv": ci}, f"Add benchmark for commit {commit}", date=f"2025-01-0{2 + week}T00:00:00+00:00"
        )
    rows = 1500
    command = [
        sys.executable,
        "-m",
        "bench",
        "--rows",
        str(rows),
        "--json",
        "--data-dir",
        str(tmp_path / "data"),
        "--work-dir",
        str(tmp_path / "work"),
        "--source",
        str(upstream_repo.path),
        "--scales",
        "500",
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=settings.PROJECT_ROOT, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    summary = json.loads(done.stdout.strip().splitlines()[-1])
    for key in RATIOS:
        assert isinstance(summary[key], float) and math.isfinite(summary[key]) and summary[key] > 0, (key, summary[key])
    phases = {phase["name"]: phase for phase in summary["phases"]}
    for name in ("normalize (stage + tables)", "floor: polars CSV -> zstd Parquet", "materialize real history", "no-change re-run"):
        assert f"| {name}" in done.stdout, f"the table has no row for {name}"
        assert phases[name]["wall_s"] > 0 and phases[name]["peak_rss_mb"] > 0

    # The normalization phase ran the pipeline on the generated file: every row is accounted for.
    counts = phases["normalize (stage + tables)"]["detail"]["row_counts"]
    assert counts["run_snapshots"] + counts["quarantine"] == rows
    snapshots = pl.read_parquet(tmp_path / "work" / "synthetic" / "warehouse" / "snapshots.parquet")
    assert snapshots["row_count"].to_list() == [rows]
    # The reference read the same file and stored the same tables.
    stored = phases["storing the tables' rows alone"]["detail"]
    assert stored["records"] == rows
    assert stored["rows"] == {name: counts[name] for name in ("runs", "measurements", "run_snapshots")}
    assert "| reading the CSV alone" in done.stdout
    assert phases["materialize real history"]["rows"] == phases["no-change re-run"]["rows"] == 4
    # One new CI folder: the history built without it, then with it, set against the clean build.
    assert phases["materialize one new CI folder"]["rows"] == 4 and phases["materialize, newest CI folder held back"]["wall_s"] > 0
    assert summary["new_folder"] == "benchmarks/bbb2222/benchmark.csv"
    assert isinstance(summary["new_folder_ratio"], float) and summary["new_folder_ratio"] > 0
    assert "\none new CI folder (benchmarks/bbb2222/benchmark.csv) against a clean build: " in done.stdout
    assert "raw_snapshots" in summary["dagster_runs"]["materialize one new CI folder"]["steps_s"]
    assert phases["statistics (build_database)"]["detail"]["runs"] == counts["runs"]
    # Every target's figure is a line, the whole ingest is measured at the other scale, every query on every design.
    for key, _, _ in TARGETS:
        assert f"\n{key} " in done.stdout, f"no line for {key}"
    assert set(summary["cost_per_million_s"]) == {"500", str(rows)} and summary["cost_ratio_against_rows"] == 500
    assert set(summary["peak_rss_mb"]) >= {"normalize (stage + tables)", "statistics (build_database)", "materialize real history"}
    # Peak RSS at both sizes, per growing phase, and a line that gives them.
    normalized = {"500": phases["normalize (stage + tables) at 500 rows"], str(rows): phases["normalize (stage + tables)"]}
    assert summary["peak_rss_by_rows_mb"]["normalize"] == {size: round(p["peak_rss_mb"], 2) for size, p in normalized.items()}
    assert set(summary["peak_rss_by_rows_mb"]["build"]) == {"500", str(rows)}
    assert "\npeak RSS by rows (MB): normalize 500 rows " in done.stdout
    for key in ("queries_s", "queries_copies_s"):
        assert set(summary[key]) == {
            "filter_kernel_gpu_workload",
            "group_by_gpu",
            "scorecard",
            "run_by_run_id",
            "measurements_of_run",
            "measurements_one_kernel",
        }, key
    assert summary["build_views"]["database_mb"] > 0 and summary["build_copies"]["database_mb"] > 0
    # The statistics SQL by statistic: one entry per statistic and intermediate, and a line.
    parts = summary["stats_parts_s"]
    assert set(parts) == {*database_build.STATISTICS, *database_build.INTERMEDIATES}
    assert all(seconds >= 0 for seconds in parts.values())
    assert "\nstatistics SQL by statistic (s, of " in done.stdout
    assert "\nchange_points_s " in done.stdout and "| series noise and change points (build step)" in done.stdout
    # What each Dagster run wrote to its instance: the first run materializes the history's one partition and
    # every asset, more events than the trivial run's three assets; a line says it.
    runs = summary["dagster_runs"]
    assert runs["floor: trivial 3-asset Dagster run"]["materializations"] == 6
    assert runs["materialize real history"]["events"] > runs["floor: trivial 3-asset Dagster run"]["events"]
    assert all(run["run_s"] > 0 for run in runs.values())
    # Where each run's time went: the steps it ran (the first stages raw_snapshots, the re-run stages nothing),
    # the time before them, and the events by kind.
    assert "raw_snapshots" in runs["materialize real history"]["steps_s"] and "raw_snapshots" not in runs["no-change re-run"]["steps_s"]
    assert all(run["before_steps_s"] >= 0 and sum(run["event_kinds"].values()) == run["events"] for run in runs.values())
    assert "\nDagster runs, first event to last: " in done.stdout and " s before the first step, " in done.stdout
    # The file is cached for the next run, and generated the same way each time.
    cached = synthetic.cached_csv(tmp_path / "data", rows)
    assert cached.read_bytes() == synthetic.write_csv(tmp_path / "again.csv", rows).read_bytes()


def with_clashing_runs(path: Path, copies: int = 40) -> Path:
    """Append rows whose keys differ from earlier rows only in what slugs drop (a GPU name's trailing
    space), so their run ids clash and are made unique with a suffix."""
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1 : copies + 1]
    gpu = header.index("gpu_name")
    with open(path, "a", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        for row in body:
            writer.writerow([*row[:gpu], row[gpu] + " ", *row[gpu + 1 :]])
    return path


def normalize_into(warehouse: Path, source: Path) -> Path:
    settings_ = for_source(str(source), "main", "*.csv", warehouse.parent / "cache")
    with store.writer_lock(warehouse):
        listing = sync(warehouse, settings_)
        stage_new(warehouse, settings_, listing)
        build_tables(warehouse, listing)
    return warehouse


def test_streamed_normalization_equals_the_in_memory_one(tmp_path, monkeypatch):
    source = with_clashing_runs(synthetic.write_csv(tmp_path / "synthetic.csv", 3000, seed=3))
    whole = normalize_into(tmp_path / "whole" / "warehouse", source)

    monkeypatch.setattr(parse_fast, "BATCH_BYTES", 8192)
    monkeypatch.setattr(external_sort, "BUCKET_ROWS", 200)
    monkeypatch.setattr(external_sort, "FLUSH_ROWS", 300)
    streamed = normalize_into(tmp_path / "streamed" / "warehouse", source)

    assert len(list(Layout(streamed).staging.glob("*/rows-*.parquet"))) > 50, "the file was not read in many chunks"
    assert len(list(Layout(whole).staging.glob("*/rows-*.parquet"))) == 1
    for name in TABLE_NAMES:
        assert_frame_equal(pl.read_parquet(whole / f"{name}.parquet"), pl.read_parquet(streamed / f"{name}.parquet"), check_exact=True)
    runs = pl.read_parquet(streamed / "runs.parquet")
    assert runs["run_id"].str.contains("~").sum() == 80, "the clashing runs did not get suffixed ids"
    assert runs["run_id"].is_sorted() and runs["run_id"].is_unique().all()


def test_ahead_hands_over_items_errors_and_stops_its_producer():
    assert list(ahead(iter(range(50)), depth=2)) == list(range(50))

    def failing():
        yield 1
        raise ValueError("broken at the second item")

    got = []
    with pytest.raises(ValueError, match="second item"):
        for item in ahead(failing()):
            got.append(item)
    assert got == [1]

    closed = threading.Event()

    def endless():
        try:
            n = 0
            while True:
                yield n
                n += 1
        finally:
            closed.set()

    for item in ahead(endless()):
        if item == 3:
            break
    assert closed.wait(5), "the producer was not closed when the consumer stopped"


def test_runs_of_rows_with_distinct_ids_equal_the_general_deduplication(tmp_path, monkeypatch):
    warehouse = normalize_into(tmp_path / "warehouse", synthetic.write_csv(tmp_path / "synthetic.csv", 3000, seed=5))
    metas = tables.staged_metas(warehouse)
    parts = tables.staged_parts(warehouse, History(tuple(metas)), "rows")
    rows = pl.concat([external_sort.with_history(external_sort.read_part(part, schemas.RUN_ROWS), part) for part in parts])
    assert rows["run_id"].is_unique().all()
    fast, renamed = run_identity.distinct_runs(rows)
    assert renamed.is_empty()
    with monkeypatch.context() as patched:
        patched.setattr(run_identity, "each_row_a_run", lambda *args: None)
        general, _ = run_identity.distinct_runs(rows)
    assert_frame_equal(fast, general, check_exact=True)
    # A repeated id (the same run in a later snapshot) is left to the general deduplication.
    again = pl.concat([rows, rows.head(5).with_columns(pl.col("_order") + external_sort.ROWS_PER_SNAPSHOT)])
    assert run_identity.each_row_a_run(again) is None
    assert run_identity.distinct_runs(again)[0].height == rows.height


def test_staging_bench_stages_a_synthetic_history_on_one_and_two_workers(capsys):
    from bench import staging

    assert staging.main(["--no-history", "--snapshots", "4", "--rows", "50", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["synthetic"]["snapshots"] == 4 and figures["synthetic"]["speedup"] > 0
