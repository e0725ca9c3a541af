"""The bench's phases, each run in a process of its own by `python -m bench --phase NAME ARGS`;
each returns what it measured as a JSON object."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pipelines.core import layout, settings

FLOOR_GROUP_BY = (
    "CREATE TEMP TABLE floor AS SELECT group_id, quantile_cont(value, 0.2) AS p20, quantile_cont(value, 0.8) AS p80 "
    "FROM runs WHERE status = 'passed' GROUP BY ALL"
)
# The README's example queries (and a lookup of one run, through runs and through a viewed table), each
# timed on warehouse.duckdb as a reader opens it and on the same file with every table a DuckDB table.
QUERIES = {
    "filter_kernel_gpu_workload": "SELECT provider, round(value / 1e6, 3) AS median_ms, liger_version, observed_at FROM runs"
    " WHERE kernel = $kernel AND pass = $pass AND metric = $metric AND gpu_name = $gpu AND workload_slug = $workload"
    " ORDER BY observed_at DESC, provider",
    "group_by_gpu": "SELECT gpu_name, count(*) AS runs, count(*) FILTER (WHERE in_latest) AS in_latest, count(DISTINCT kernel) AS kernels,"
    " min(observed_at)::DATE AS first, max(observed_at)::DATE AS last FROM runs GROUP BY gpu_name ORDER BY runs DESC",
    "scorecard": "SELECT kernel, pass, metric, baseline_provider, n_groups, round(geomean_ratio, 3) AS geomean, wins, losses"
    " FROM kernel_scorecard WHERE gpu_name = $gpu AND provider = 'liger' ORDER BY geomean_ratio DESC LIMIT 8",
    "run_by_run_id": "SELECT * FROM runs WHERE run_id = $run_id",
    "measurements_of_run": "SELECT * FROM measurements WHERE run_id = $run_id",
    "measurements_one_kernel": "SELECT r.provider, avg(m.value) AS mean FROM measurements m JOIN runs r USING (run_id)"
    " WHERE r.kernel = $kernel GROUP BY ALL",
}
# Each query runs at least QUERY_REPEATS times and for QUERY_SECONDS; its best time counts (a shared machine's noise
# only ever adds time).
QUERY_REPEATS = 7
QUERY_SECONDS = 1.0


def _phase_floor_csv(csv: str, out: str) -> dict:
    import polars as pl

    # All columns as text, as the pipeline reads them (and as the x_value column needs: `llama_3_8b`).
    pl.scan_csv(csv, infer_schema=False).sink_parquet(out, compression="zstd")
    return {}


def _phase_normalize(csv: str, warehouse: str) -> dict:
    from pipelines.assemble.tables_build import build_tables
    from pipelines.ingest.steps import stage_new, sync
    from pipelines.storage import store

    folder = Path(warehouse)
    source = settings.for_source(csv, cache_dir=folder.parent / "cache")
    with store.writer_lock(folder):
        started = time.perf_counter()
        listing = sync(folder, source)
        stage_new(folder, source, listing)
        staged = time.perf_counter()
        report = build_tables(folder, listing)
    return {"stage_s": staged - started, "tables_s": time.perf_counter() - staged, "row_counts": report.row_counts}


def _phase_normalize_output(csv: str, warehouse: str) -> dict:
    """What any normalization of this file into these tables costs before it computes anything: reading
    the CSV as the pipeline reads it (`parse.iter_records`, quoting checks included), and storing the
    normalized tables' rows with the pipeline's writer settings. Only the reads and the writes are
    timed, each on one thread, as the pipeline runs each of them."""
    import polars as pl
    import pyarrow.parquet as pq

    from pipelines.assemble import assembly as tables
    from pipelines.assemble import external_sort
    from pipelines.core import schemas
    from pipelines.ingest.parse.header import read_header
    from pipelines.ingest.parse.records import iter_records
    from pipelines.storage import store

    path = Path(csv)
    started, cpu = time.perf_counter(), time.process_time()
    records = sum(frame.height for frame in iter_records(path, read_header(path)))
    read_s, read_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    store_s = store_cpu_s = 0.0
    written = {}
    with tempfile.TemporaryDirectory(dir=Path(warehouse).parent) as folder:
        for name, unique in tables.ROW_TABLES_UNIQUE.items():
            with store.ParquetAppender(
                Path(folder) / layout.table_file(name), schemas.TABLES[name], unique, sorted_by=tables.SORTED_BY.get(name)
            ) as out:
                for batch in pq.ParquetFile(layout.Layout(warehouse).table(name)).iter_batches(external_sort.BUCKET_ROWS):
                    frame = pl.from_arrow(batch)
                    started, cpu = time.perf_counter(), time.process_time()
                    out.write(frame)
                    store_s, store_cpu_s = store_s + time.perf_counter() - started, store_cpu_s + time.process_time() - cpu
                written[name] = out.rows
    return {"read_s": read_s, "read_cpu_s": read_cpu_s, "store_s": store_s, "store_cpu_s": store_cpu_s, "records": records, "rows": written}


def _phase_dagster_floor() -> dict:
    import dagster as dg

    @dg.asset
    def a() -> int:
        return 1

    @dg.asset
    def b(a: int) -> int:
        return a + 1

    @dg.asset
    def c(b: int) -> int:
        return b + 1

    from pipelines.orchestration.instance_home import open_instance

    with open_instance(Path(os.environ["DAGSTER_HOME"])) as instance:
        result = dg.materialize([a, b, c], instance=instance)
    if not result.success:
        raise RuntimeError("the trivial Dagster materialization failed")
    return {}


def _phase_run_events() -> dict:
    """What the newest run of DAGSTER_HOME's instance wrote to its event log, and the time from its first event
    to its last: each event is a write to the instance's storage, Dagster's own cost per step, check and partition.
    Where that time went: before the first step starts (the planned events, the run's start), inside the steps (the
    work, with the events they write), and the rest (the events between steps); and the events by kind."""
    import collections

    from pipelines.orchestration.instance_home import open_instance

    with open_instance(Path(os.environ["DAGSTER_HOME"])) as instance:
        (run,) = instance.get_runs(limit=1)
        records = instance.all_logs(run.run_id)
    kinds = collections.Counter(r.dagster_event.event_type_value if r.dagster_event else "LOG" for r in records)
    started: dict[str, float] = {}
    steps: dict[str, float] = {}
    for record in records:
        kind = record.dagster_event.event_type_value if record.dagster_event else None
        if kind == "STEP_START":
            started[record.step_key] = record.timestamp
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE") and record.step_key in started:
            steps[record.step_key] = record.timestamp - started[record.step_key]
    first_step = min(started.values(), default=records[-1].timestamp)
    run_s = records[-1].timestamp - records[0].timestamp
    return {
        "events": len(records),
        "run_s": run_s,
        "materializations": kinds["ASSET_MATERIALIZATION"] + kinds["ASSET_MATERIALIZATION_PLANNED"],
        "before_steps_s": first_step - records[0].timestamp,
        "steps_s": {step: round(seconds, 2) for step, seconds in steps.items()},
        "between_steps_s": run_s - (first_step - records[0].timestamp) - sum(steps.values()),
        "event_kinds": dict(kinds.most_common()),
    }


def _phase_statistics(warehouse: str, design: str = "views") -> dict:
    """build_database over the normalized warehouse; with design "copies", the same build beside the Parquet
    files in a folder of links to them. The two designs were three tables viewed over Parquet against every
    table copied in; the file is now self-contained, so both copy every table (docs/performance.md)."""
    from pipelines.statistics import database_build

    folder = Path(warehouse)
    if design == "copies":
        folder = _linked_warehouse(folder, folder.parent / "copies")
    timed: dict[str, float] = {}
    returned: dict[str, object] = {}

    def timing(step: str, run):
        def timed_step(*args):
            started = time.perf_counter()
            returned[step] = run(*args)
            timed[step] = time.perf_counter() - started
            return returned[step]

        return timed_step

    # The statistics SQL is what the floor is set against; the copy of the tables is reported beside it.
    database_build._load_tables = timing("load_s", database_build._load_tables)
    database_build._create_statistics = timing("sql_s", database_build._create_statistics)
    counts = database_build.build_database(folder, settings.read(os.environ).baselines)
    size = layout.Layout(folder).database.stat().st_size
    return {
        "sql_s": timed["sql_s"],
        "load_s": timed["load_s"],
        # The statistics SQL by statistic (and intermediate), as _create_statistics timed it in this build.
        "sql_parts_s": returned["sql_s"],
        "runs": counts["runs"],
        "database_mb": size / 2**20,
    }


def _linked_warehouse(warehouse: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for file in warehouse.glob("*.parquet"):
        (folder / file.name).unlink(missing_ok=True)
        (folder / file.name).symlink_to(file)
    return folder


def _phase_statistics_floor(warehouse: str) -> dict:
    import duckdb

    with duckdb.connect(str(layout.Layout(warehouse).database), read_only=True) as con:
        started = time.perf_counter()
        con.execute(FLOOR_GROUP_BY)
        seconds = time.perf_counter() - started
        (groups,) = con.execute("SELECT count(*) FROM floor").fetchone()
    return {"sql_s": seconds, "groups": groups}


@contextlib.contextmanager
def _beside_the_database(warehouse: str, name: str) -> Iterator:
    """A connection to a new DuckDB file `<name>.duckdb` in a scratch folder beside warehouse.duckdb (its catalog is
    `name`), with the built file attached read-only as `built`; both gone on exit."""
    import duckdb

    from pipelines.statistics import database_build

    database = layout.Layout(warehouse).database
    with (
        tempfile.TemporaryDirectory(dir=database.parent) as folder,
        duckdb.connect(str(Path(folder) / f"{name}.duckdb"), config={"memory_limit": database_build.MEMORY_LIMIT}) as con,
    ):
        con.execute("ATTACH ? AS built (READ_ONLY)", [str(database)])
        yield con


def _phase_statistics_output(warehouse: str) -> dict:
    """Storing the statistics' rows alone, copied as they are into a new file: what any SQL that
    stores them costs before it computes anything."""
    from pipelines.statistics import database_build, db

    with _beside_the_database(warehouse, "copy") as con:
        con.execute("SET preserve_insertion_order = false")
        started = time.perf_counter()
        for name in db.STATISTICS:
            if name not in db.VIEWS:
                database_build.create_table(con, name, f'SELECT * FROM built."{name}"')
        con.execute("CHECKPOINT")
        seconds = time.perf_counter() - started
    return {"sql_s": seconds}


def _phase_series_floor(warehouse: str) -> dict:
    """The change-point step's floor: reading the series as it reads them (sql/series/series.sql and
    series_points.sql, to Arrow) and storing its two tables' rows, copied as they are into a new file."""
    from pipelines.core import sql_files
    from pipelines.statistics import db

    with _beside_the_database(warehouse, "floor") as con:
        # The series SQL names runs, snapshots and the stored macros without a catalog: look them up in the built file.
        con.execute("SET search_path = 'built.main,floor.main'")
        started = time.perf_counter()
        # Every group at once ($lo and $hi unbound): the build reads them a range at a time, at the same cost.
        everything = {"lo": None, "hi": None}
        points = sum(
            con.sql(sql_files.text(f"series/{name}"), params=everything).to_arrow_table().num_rows for name in ("series", "series_points")
        )
        for name in db.SERIES_STATISTICS:
            con.execute(f'CREATE TABLE floor.main."{name}" AS SELECT * FROM built."{name}"')
        con.execute("CHECKPOINT")
        seconds = time.perf_counter() - started
    return {"floor_s": seconds, "rows_read": points}


def _phase_generate(data_dir: str, rows: str, seed: str) -> dict:
    from bench import synthetic

    return {"csv": str(synthetic.cached_csv(Path(data_dir), int(rows), int(seed)))}


def _phase_queries(warehouse: str, design: str = "views") -> dict:
    """The best of QUERY_REPEATS times of each of QUERIES on warehouse.duckdb, opened as readers open it."""
    from pipelines.statistics import db

    folder = Path(warehouse) if design == "views" else Path(warehouse).parent / "copies"
    with db.open_readonly(folder) as con:
        return _timed_queries(con)


def _timed_queries(con) -> dict:
    # One run in the middle of runs, the same in every database: its kernel, GPU, workload and id.
    (count,) = con.execute("SELECT count(*) FROM runs").fetchone()
    chosen = con.execute(
        "SELECT kernel, pass, metric, gpu_name, workload_slug, run_id FROM runs ORDER BY run_id LIMIT 1 OFFSET ?", [count // 2]
    ).fetchone()
    params = dict(zip(("kernel", "pass", "metric", "gpu", "workload", "run_id"), chosen, strict=True))
    seconds = {}
    for name, sql in QUERIES.items():
        used = {key: value for key, value in params.items() if f"${key}" in sql}
        best, spent, repeats = float("inf"), 0.0, 0
        while repeats < QUERY_REPEATS or spent < QUERY_SECONDS:
            started = time.perf_counter()
            con.execute(sql, used).fetchall()
            took = time.perf_counter() - started
            best, spent, repeats = min(best, took), spent + took, repeats + 1
        seconds[name] = best
    return seconds


PHASES = {
    "generate": _phase_generate,
    "floor-csv": _phase_floor_csv,
    "normalize": _phase_normalize,
    "normalize-output": _phase_normalize_output,
    "dagster-floor": _phase_dagster_floor,
    "run-events": _phase_run_events,
    "statistics": _phase_statistics,
    "statistics-floor": _phase_statistics_floor,
    "statistics-output": _phase_statistics_output,
    "queries": _phase_queries,
    "series-floor": _phase_series_floor,
}
