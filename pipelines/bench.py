"""`python -m pipelines.bench --rows N`: how close the pipeline runs to what the machine allows.

Every phase runs in a fresh process of its own (its peak RSS and CPU time are
that process's alone, read with os.wait4) and is set against a floor measured
in the same run:

- normalize: a synthetic Liger CSV of N rows (pipelines.lib.synthetic, cached
  under --data-dir) ingested as the pipeline ingests a CSV source (sync, stage,
  assemble and commit the SPEC tables), against polars reading the same file
  and writing it as zstd Parquet;
- materialize and no-change re-run: `python -m pipelines materialize` of the
  real history (the bundle in ../shared, or --source), against three trivial
  assets materialized in-process by Dagster with the same instance config;
- statistics: warehouse_db.build_database over the normalized warehouse; its
  statistics SQL is set against one DuckDB GROUP BY with two quantiles over the
  same runs table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from pipelines.lib import settings

DEFAULT_BUNDLE = settings.PROJECT_ROOT.parent / "shared" / "liger-data" / "liger-benchmark-data.bundle"
FLOOR_GROUP_BY = (
    "CREATE TEMP TABLE floor AS SELECT group_id, quantile_cont(value, 0.2) AS p20, quantile_cont(value, 0.8) AS p80 "
    "FROM runs WHERE status = 'passed' GROUP BY ALL"
)


@dataclass
class Phase:
    name: str
    floor: str | None  # the phase it is set against
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    rows: int | None = None
    detail: dict | None = None

    @property
    def s_per_million(self) -> float | None:
        return self.wall_s / self.rows * 1e6 if self.rows else None


# ---------------------------------------------------------------- phases, each run in its own process


def _phase_floor_csv(csv: str, out: str) -> dict:
    import polars as pl

    # All columns as text, as the pipeline reads them (and as the x_value column needs: `llama_3_8b`).
    pl.scan_csv(csv, infer_schema=False).sink_parquet(out, compression="zstd")
    return {}


def _phase_normalize(csv: str, warehouse: str) -> dict:
    from pipelines.lib import store
    from pipelines.lib.warehouse import SourceSettings, build_tables, stage_new, sync

    folder = Path(warehouse)
    source = SourceSettings(csv, settings.DEFAULT_BRANCH, settings.DEFAULT_FILE_GLOB, folder.parent / "cache")
    with store.writer_lock(folder):
        started = time.perf_counter()
        listing = sync(folder, source)
        stage_new(folder, source, listing)
        staged = time.perf_counter()
        report = build_tables(folder, list(listing.files_at_head))
    return {"stage_s": staged - started, "tables_s": time.perf_counter() - staged, "row_counts": report.row_counts}


def _phase_normalize_output(csv: str, warehouse: str) -> dict:
    """What any normalization of this file into these tables costs before it computes anything: reading
    the CSV as the pipeline reads it (`parse.iter_records`, quoting checks included), and storing the
    normalized tables' rows with the pipeline's writer settings. Only the reads and the writes are
    timed, each on one thread, as the pipeline runs each of them."""
    import polars as pl
    import pyarrow.parquet as pq

    from pipelines.lib import schemas, store, tables
    from pipelines.lib.parse import iter_records
    from pipelines.lib.parse_header import read_header

    path = Path(csv)
    started, cpu = time.perf_counter(), time.process_time()
    records = sum(frame.height for frame in iter_records(path, read_header(path)))
    read_s, read_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    store_s = store_cpu_s = 0.0
    written = {}
    with tempfile.TemporaryDirectory(dir=Path(warehouse).parent) as folder:
        for name, unique in tables.ROW_TABLES_UNIQUE.items():
            with store.ParquetAppender(Path(folder) / f"{name}.parquet", schemas.TABLES[name], unique) as out:
                for batch in pq.ParquetFile(Path(warehouse) / f"{name}.parquet").iter_batches(tables.BUCKET_ROWS):
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

    os.chdir(os.environ["DAGSTER_HOME"])
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize([a, b, c], instance=instance)
    if not result.success:
        raise RuntimeError("the trivial Dagster materialization failed")
    return {}


def _phase_statistics(warehouse: str) -> dict:
    from pipelines.lib import warehouse_db

    timed: dict[str, float] = {}

    def timing(step: str, run):
        def timed_step(*args):
            started = time.perf_counter()
            run(*args)
            timed[step] = time.perf_counter() - started

        return timed_step

    # The statistics SQL is what the floor is set against; the copy of the tables is reported beside it.
    warehouse_db._load_tables = timing("load_s", warehouse_db._load_tables)
    warehouse_db._create_statistics = timing("sql_s", warehouse_db._create_statistics)
    counts = warehouse_db.build_database(Path(warehouse), settings.baselines())
    return {"sql_s": timed["sql_s"], "load_s": timed["load_s"], "runs": counts["runs"]}


def _phase_statistics_floor(warehouse: str) -> dict:
    import duckdb

    from pipelines.lib import warehouse_db

    with duckdb.connect(str(warehouse_db.database_path(Path(warehouse))), read_only=True) as con:
        started = time.perf_counter()
        con.execute(FLOOR_GROUP_BY)
        seconds = time.perf_counter() - started
        (groups,) = con.execute("SELECT count(*) FROM floor").fetchone()
    return {"sql_s": seconds, "groups": groups}


def _phase_statistics_output(warehouse: str) -> dict:
    """Storing the statistics' rows alone, copied as they are into a new file: what any SQL that
    stores them costs before it computes anything."""
    import duckdb

    from pipelines.lib import warehouse_db

    database = warehouse_db.database_path(Path(warehouse))
    with (
        tempfile.TemporaryDirectory(dir=database.parent) as folder,
        duckdb.connect(str(Path(folder) / "copy.duckdb"), config={"memory_limit": warehouse_db.MEMORY_LIMIT}) as con,
    ):
        con.execute("ATTACH ? AS built (READ_ONLY)", [str(database)])
        con.execute("SET preserve_insertion_order = false")
        started = time.perf_counter()
        for name in warehouse_db.STATISTICS:
            if name not in warehouse_db.VIEWS:
                warehouse_db.create_table(con, name, f'SELECT * FROM built."{name}"')
        con.execute("CHECKPOINT")
        seconds = time.perf_counter() - started
    return {"sql_s": seconds}


def _phase_generate(data_dir: str, rows: str, seed: str) -> dict:
    from pipelines.lib import synthetic

    return {"csv": str(synthetic.cached_csv(Path(data_dir), int(rows), int(seed)))}


PHASES = {
    "generate": _phase_generate,
    "floor-csv": _phase_floor_csv,
    "normalize": _phase_normalize,
    "normalize-output": _phase_normalize_output,
    "dagster-floor": _phase_dagster_floor,
    "statistics": _phase_statistics,
    "statistics-floor": _phase_statistics_floor,
    "statistics-output": _phase_statistics_output,
}


# ---------------------------------------------------------------- measuring


def measure(name: str, command: list[str], env: dict[str, str] | None = None, floor: str | None = None, rows: int | None = None) -> Phase:
    """Run `command` in a new process; its wall time, CPU time and peak RSS, and what it printed last as JSON."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode(errors="replace")
    if process.returncode != 0:
        raise RuntimeError(f"phase {name} failed (exit {process.returncode}):\n{text[-3000:]}")
    detail = _last_json(text)
    return Phase(name, floor, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, rows, detail)


def _last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def _phase_command(phase: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "pipelines.bench", "--phase", phase, *args]


def _history_env(root: Path, source: Path) -> dict[str, str]:
    """A fresh warehouse, clone cache and Dagster home (the project's dagster.yaml) for the real history."""
    home = root / "dagster-home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    return {
        "DAGSTER_HOME": str(home),
        "WAREHOUSE_DIR": str(root / "warehouse"),
        "LIGER_CACHE_DIR": str(root / "cache"),
        "LIGER_SOURCE": str(source),
    }


def run(
    rows: int, seed: int, data_dir: Path, work: Path, source: Path | None, history: bool = True, statistics: bool = True
) -> list[Phase]:
    # A warehouse left by an earlier run in the same --work-dir would make every phase a no-change run.
    for built in ("synthetic", "history"):
        shutil.rmtree(work / built, ignore_errors=True)
    # In a process of its own: a child's peak RSS starts from its parent's at fork, so a bench
    # process grown by generating 10M rows would inflate every phase's figure.
    generated = measure("generate", _phase_command("generate", str(data_dir), str(rows), str(seed)))
    csv = Path(generated.detail["csv"])
    phases = [
        measure("floor: polars CSV -> zstd Parquet", _phase_command("floor-csv", str(csv), str(work / "floor.parquet")), rows=rows),
        measure(
            "normalize (stage + tables)",
            _phase_command("normalize", str(csv), str(work / "synthetic" / "warehouse")),
            floor="floor: polars CSV -> zstd Parquet",
            rows=rows,
        ),
    ]
    # Not a floor of the issue's, a second reference: reading the file and storing the tables alone.
    output = measure("normalize-output", _phase_command("normalize-output", str(csv), str(work / "synthetic" / "warehouse")))
    csv_floor = phases[0].name
    phases += [
        Phase("reading the CSV alone", csv_floor, output.detail["read_s"], output.detail["read_cpu_s"], output.peak_rss_mb, rows),
        Phase(
            "storing the tables' rows alone",
            csv_floor,
            output.detail["store_s"],
            output.detail["store_cpu_s"],
            output.peak_rss_mb,
            rows,
            output.detail,
        ),
    ]
    if statistics:
        warehouse = str(work / "synthetic" / "warehouse")
        stats = measure("statistics (build_database)", _phase_command("statistics", warehouse), rows=rows)
        floor = measure("floor: DuckDB GROUP BY, 2 quantiles", _phase_command("statistics-floor", warehouse), rows=rows)
        output = measure("storing the statistics' rows alone", _phase_command("statistics-output", warehouse), rows=rows)
        sql = Phase("statistics SQL alone", floor.name, stats.detail["sql_s"], 0.0, stats.peak_rss_mb, rows)
        floor_sql = Phase(floor.name, None, floor.detail["sql_s"], floor.cpu_s, floor.peak_rss_mb, rows)
        # Not a floor of the issue's, a second reference: how much of the SQL's time its output alone takes.
        output_sql = Phase(output.name, None, output.detail["sql_s"], output.cpu_s, output.peak_rss_mb, rows)
        phases += [stats, floor_sql, output_sql, sql]
    if history and source is not None:
        root = work / "history"
        env = _history_env(root, source)
        floor_env = {**env, "DAGSTER_HOME": str(Path(env["DAGSTER_HOME"]).with_name("dagster-floor-home"))}
        Path(floor_env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
        shutil.copy(settings.PROJECT_ROOT / "dagster.yaml", Path(floor_env["DAGSTER_HOME"]) / "dagster.yaml")
        floor = measure("floor: trivial 3-asset Dagster run", _phase_command("dagster-floor"), env=floor_env)
        materialize = [sys.executable, "-m", "pipelines", "materialize"]
        first = measure("materialize real history", materialize, env=env, floor=floor.name)
        again = measure("no-change re-run", materialize, env=env, floor=floor.name)
        history_rows = _history_rows(Path(env["WAREHOUSE_DIR"]))
        first.rows = again.rows = history_rows
        phases += [floor, first, again]
    return phases


def _history_rows(warehouse: Path) -> int | None:
    import polars as pl

    snapshots = warehouse / "snapshots.parquet"
    return int(pl.read_parquet(snapshots)["row_count"].sum()) if snapshots.exists() else None


# ---------------------------------------------------------------- reporting


def ratios(phases: list[Phase]) -> dict[str, float | None]:
    by_name = {p.name: p for p in phases}

    def ratio(name: str) -> float | None:
        phase = by_name.get(name)
        floor = by_name.get(phase.floor) if phase and phase.floor else None
        return round(phase.wall_s / floor.wall_s, 2) if phase and floor and floor.wall_s > 0 else None

    normalize = by_name.get("normalize (stage + tables)")
    return {
        "normalize_ratio": ratio("normalize (stage + tables)"),
        "normalize_peak_rss_mb": round(normalize.peak_rss_mb, 1) if normalize else None,
        "materialize_ratio": ratio("materialize real history"),
        "noop_ratio": ratio("no-change re-run"),
        "stats_ratio": ratio("statistics SQL alone"),
        "stats_output_ratio": _output_ratio(by_name),
        "normalize_read_store_ratio": _read_store_ratio(by_name),
    }


def _read_store_ratio(by_name: dict[str, Phase]) -> float | None:
    """Reading the CSV and storing the tables alone, against the floor: how much of the normalization's
    ratio is spent before it computes anything."""
    parts = [by_name.get(name) for name in ("reading the CSV alone", "storing the tables' rows alone")]
    floor = by_name.get("floor: polars CSV -> zstd Parquet")
    if not all(parts) or not floor or floor.wall_s <= 0:
        return None
    return round(sum(p.wall_s for p in parts) / floor.wall_s, 2)


def _output_ratio(by_name: dict[str, Phase]) -> float | None:
    """The statistics SQL against storing its rows alone."""
    sql, output = by_name.get("statistics SQL alone"), by_name.get("storing the statistics' rows alone")
    return round(sql.wall_s / output.wall_s, 2) if sql and output and output.wall_s > 0 else None


def table(phases: list[Phase]) -> str:
    """The phases as a markdown table, its cells padded so that it reads as columns in a terminal too."""
    from pipelines.lib.metadata import markdown_table  # polars with it: the phases' processes need neither

    by_name = {p.name: p for p in phases}
    head = [f"{'phase':38}", f"{'wall s':>8}", f"{'s / M rows':>10}", f"{'CPU s':>7}", f"{'peak RSS MB':>11}", f"{'ratio to floor':>14}"]
    rows = []
    for p in phases:
        floor = by_name.get(p.floor) if p.floor else None
        ratio = f"{p.wall_s / floor.wall_s:.2f}x" if floor and floor.wall_s > 0 else ("floor" if p.name.startswith("floor") else "")
        per_million = f"{p.s_per_million:.2f}" if p.s_per_million is not None else ""
        cpu = f"{p.cpu_s:.1f}" if p.cpu_s else ""
        rows.append([f"{p.name:38}", f"{p.wall_s:8.2f}", f"{per_million:>10}", f"{cpu:>7}", f"{p.peak_rss_mb:11.0f}", f"{ratio:>14}"])
    return markdown_table(head, rows, width=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the synthetic CSV (default 100000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=settings.PROJECT_ROOT / "data" / "bench",
        help="where synthetic CSVs are cached (default data/bench)",
    )
    parser.add_argument("--work-dir", type=Path, help="where warehouses are built (default: a temporary folder, removed)")
    parser.add_argument("--source", type=Path, default=DEFAULT_BUNDLE, help="the real history (default: the shared bundle)")
    parser.add_argument("--no-history", action="store_true", help="skip the real-history phases")
    parser.add_argument("--no-statistics", action="store_true", help="skip the statistics phases")
    parser.add_argument("--json", action="store_true", help="also print one JSON object with the ratios and every phase")
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(PHASES[args.phase[0]](*args.phase[1:]), default=str))
        return 0
    source = args.source if args.source and args.source.exists() else None
    # Absolute: it is handed to phases as DAGSTER_HOME, which Dagster wants absolute.
    work = (args.work_dir or Path(tempfile.mkdtemp(prefix="liger-bench-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        phases = run(args.rows, args.seed, args.data_dir, work, source, not args.no_history, not args.no_statistics)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{args.rows:,} synthetic rows (seed {args.seed}); real history: {source or 'not found, skipped'}")
    print(table(phases))
    summary = ratios(phases)
    print("ratios: " + ", ".join(f"{k} {v}" for k, v in summary.items()))
    if args.json:
        print(json.dumps({**summary, "rows": args.rows, "phases": [asdict(p) for p in phases]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
