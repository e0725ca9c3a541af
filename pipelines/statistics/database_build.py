"""Build warehouse.duckdb: the Parquet tables copied in, then the statistics of SPEC section 6.

The file is self-contained (it reads no other file, so a copy of it alone answers every query), written
in the storage format DuckDB 1.2 and later read (STORAGE_COMPATIBILITY), and carries the descriptions
of its tables and columns as comments (`column_docs`).

The statistics are SQL files in `sql/statistics/` (read through `sql_files`); this
module only runs them. The database is built in a temporary file beside
`warehouse.duckdb` and swapped in with `os.replace`, so a reader never sees
half a database, and readers, which attach the file read-only, never block a
build (they hold the old file, the build writes a new one).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipelines.core import column_docs, sql_files
from pipelines.core.layout import Layout
from pipelines.series import series_tables
from pipelines.statistics.db import (
    INTERMEDIATES,
    INTERMEDIATES_BY_RANGES,
    SERIES_STATISTICS,
    STATISTICS,
    STORED_ORDER,
    TABLES,
    VIEWS,
    WarehouseMissing,
    statistic_sql,
)
from pipelines.storage import store

# The tables are copied on LOAD_WORKERS connections side by side, each copy on one thread (`_load_tables` says why).
LOAD_WORKERS = 2
# runs alone took as long to copy as every other table together (10M runs: 75 s against 33 s), so it is copied in
# parts of its rows, up to RUNS_PARTS of at least RUNS_PART_ROWS rows each, that both workers take.
RUNS_PARTS = 4
RUNS_PART_ROWS = 250_000
# Long texts that are nearly all distinct, stored with zstd: DuckDB's default for text (dictionary
# and FSST) spends its effort looking for repeats these columns lack. At 10M runs a run_id column
# (157 characters) takes about a third of the time to write and half the space that way.
ZSTD_COLUMNS = frozenset({"run_id", "previous_run_id", "baseline_run_id", "name", "raw_timestamp"})


def build_database(warehouse_dir: Path, baselines: Sequence[str], target: Path | None = None, reuse: Reuse | None = None) -> dict[str, int]:
    """Build warehouse.duckdb (or `target`) from the Parquet tables; return the row count of every table made.
    The statistics `reuse` names are copied from its file instead of computed again.

    Hold `store.writer_lock` around it when other writers may run: it reads the tables
    together, and their `store.sweep` deletes temporary files such as this build's.
    """
    target = Layout(warehouse_dir).database if target is None else target
    reuse = reuse or Reuse()
    # store's temporary name, so a build killed midway leaves a file the next writer sweeps.
    temporary = store.temp_path(target)
    # Where DuckDB spills what does not fit in MEMORY_LIMIT; the same prefix, so it is swept too.
    spill = temporary.with_name(temporary.name + ".tmp")
    try:
        with duckdb.connect(str(temporary), config=_build_config(spill)) as con:
            if not reuse.copied() >= set(SERIES_STATISTICS):
                # Beside the tables' load, which runs in DuckDB's threads: the series step needs it next.
                series_tables.warm_up()
            _load_tables(con, Path(warehouse_dir))
            _create_statistics(con, baselines, reuse)
            _comment(con)
            counts = {name: _row_count(con, name) for name in TABLES + STATISTICS}
            con.execute("CHECKPOINT")
        store.fsync_file(temporary)
        os.replace(temporary, target)
        store.fsync_dir(target.parent)
    finally:
        for leftover in (temporary, temporary.with_name(temporary.name + ".wal")):
            leftover.unlink(missing_ok=True)
        shutil.rmtree(spill, ignore_errors=True)
    return counts


# DuckDB's default is 80% of the machine's memory; the build stays well inside a
# shared machine's share and spills to disk beyond it. At 3M runs 1 GB built the file in 30 s and
# 1.16 GB of peak RSS, 3 GB in 33 s and 1.8 GB: the statistics gain nothing from more. With the series
# streamed, at 1 GB a 1M-run build peaked at 1.17 GB and a 3M-run one at 1.34 GB (version_changes' window);
# at 768 MB 1.04 and 1.24 GB. At 512 MB, with comparable_groups' medians made by ranges (group_summary), the
# 10M-run build peaks at 950-959 MB against 866-872 at 1M (768 MB: 1,255 against 1,015), for about 5% more of
# its time (docs/performance.md).
MEMORY_LIMIT = "512MB"
# Statistics that, where runs as stored does not hold each series in order (db.STORED_ORDER), sort the runs first:
# all passed runs in one sort spilled past MEMORY_LIMIT at 10M runs (43 s), so one range of groups at a time (28 s).
BY_GROUP_RANGES = frozenset(STORED_ORDER)
# Statistics made whole, and one range of groups at a time where the whole does not fit MEMORY_LIMIT: DuckDB errs
# rather than spill some of what their statements hold (comparable_groups' medians of every group beside its joins'
# hash tables needed more than 640 MB at 10M runs; they are now group_summary's, made by ranges: see
# INTERMEDIATES_BY_RANGES). Their SQL takes `$lo` and `$hi`.
WHOLE_OR_BY_RANGES = frozenset({"comparable_groups"})
WHOLE = {"lo": None, "hi": None}


# The oldest storage format that keeps ZSTD_COLUMNS (v1.0 and v1.1 have no zstd for text): the DuckDB
# CLI and clients 1.2 and later open the file; DuckDB 2.0's own format ("version number 69") only 2.x.
STORAGE_COMPATIBILITY = "v1.2.0"


def _build_config(spill: Path) -> dict[str, str]:
    return {"memory_limit": MEMORY_LIMIT, "temp_directory": str(spill), "storage_compatibility_version": STORAGE_COMPATIBILITY}


def _comment(con: duckdb.DuckDBPyConnection) -> None:
    """Every table's, view's and column's description as its comment, which a SQL client shows.

    All in one transaction: each of the few hundred comments committed on its own cost 0.6-1 s of a small
    warehouse's build, together about 0.1 s.
    """
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'main'").fetchall())
    columns = con.execute("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'").fetchall()
    statements = []
    for name, kind in kinds.items():
        text = table_description(name)
        if text:
            statements.append(f'COMMENT ON {"VIEW" if kind == "VIEW" else "TABLE"} "{name}" IS {_literal(text)}')
    for name, column in columns:
        text = column_docs.column_description(name, column)
        if text:
            statements.append(f'COMMENT ON COLUMN "{name}"."{column}" IS {_literal(text)}')
    con.execute("BEGIN TRANSACTION")
    for statement in statements:
        con.execute(statement)
    con.execute("COMMIT")


def table_description(name: str) -> str | None:
    """A table's description, a statistic's or a view's: the header of the SQL that makes it."""
    if name in STATISTICS:
        return sql_files.description(statistic_sql(name))
    if f"views/{name}" in sql_files.names("views"):
        return sql_files.description(f"views/{name}")
    return column_docs.table_description(name)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _parquet_source(warehouse_dir: Path, table: str) -> str:
    file = Layout(warehouse_dir).table(table)
    if file.is_file():
        if store.parquet_rows(file) is None:
            raise store.DamagedFile(
                f"{file} is damaged (not readable Parquet): materialize the tables (or everything), which rebuild it from the staging",
                file,
            )
        return str(file)
    folder = Layout(warehouse_dir).table_folder(table)
    if folder.is_dir():
        return str(folder / "**" / "*.parquet")
    raise WarehouseMissing(f"{file} (or a folder {folder}/) does not exist: materialize the {table} table first")


def _load_tables(con: duckdb.DuckDBPyConnection, warehouse_dir: Path) -> None:
    """Copy the Parquet tables in, runs in run_id order.

    Copied rather than viewed, so that the file reads no other (a copy of it alone answers every query;
    a view names its Parquet by a path that DuckDB resolves against the reader's folder, not the file's)
    and readers never see Parquet that a later run rewrote under them. Each copy runs on one
    thread, LOAD_WORKERS side by side: within MEMORY_LIMIT DuckDB copies a table in its file's order on one thread
    only (10M runs on two threads: 91 s against 75), and a copy that may reorder rows would need a sort after it.
    runs is copied in parts of its file's rows, each in its own transaction, committed in the file's order: a
    table's rows are in the order of the commits that appended them, so runs keeps its file's order (10M runs in
    two parts side by side: 40 s against 75). The statistics rely on runs' row order (see `history_key` in
    sql/macros.sql); the check after the copy sorts runs where it does not hold.
    """
    sources = {table: _parquet_source(warehouse_dir.resolve(), table) for table in TABLES}
    con.execute("SET threads = 1")
    try:
        with ThreadPoolExecutor(LOAD_WORKERS) as pool:
            # The pool takes its tasks in order: the largest other table first, so that it and runs' parts keep both
            # workers busy, the small ones last. A part waits only for the part before it, which is taken before it.
            others = sorted((table for table in TABLES if table != "runs"), key=lambda table: -_source_bytes(sources[table]))
            tasks = [*others[:1], *_runs_parts(con, sources["runs"]), *others[1:]]
            futures = [pool.submit(_copy, con, task, sources) if isinstance(task, str) else pool.submit(task) for task in tasks]
            errors = [error for done in futures if (error := done.exception()) is not None]
        if errors:  # a damaged file by its name, whichever copy found it (two parts of runs may both meet the damage)
            raise next((error for error in errors if isinstance(error, store.DamagedFile)), errors[0])
    finally:
        con.execute("RESET threads")
    if not _runs_in_run_id_order(con):
        create_table(con, "runs_in_order", "SELECT * FROM runs ORDER BY run_id")
        con.execute("DROP TABLE runs")
        con.execute("ALTER TABLE runs_in_order RENAME TO runs")


def _source_bytes(source: str) -> int:
    return Path(source).stat().st_size if Path(source).is_file() else 0


def _copy(con: duckdb.DuckDBPyConnection, table: str, sources: dict[str, str]) -> None:
    with con.cursor() as cursor, _reading(sources[table]):
        create_table(cursor, table, _select_all(cursor, table, sources[table]), [sources[table]])


def _runs_parts(con: duckdb.DuckDBPyConnection, source: str) -> list[Callable[[], None]]:
    """The copies of runs' parts, in its file's order, each committing after the one before it; `runs` is made empty
    here. One copy of the whole where the table is a folder of files (their row numbers are each file's)."""
    rows = store.parquet_rows(Path(source)) if Path(source).is_file() else None
    n_parts = max(1, min(RUNS_PARTS, (rows or 0) // RUNS_PART_ROWS))
    if rows is None or n_parts == 1:
        return [lambda: _copy(con, "runs", {"runs": source})]
    part_select = _select_all(con, "runs", source, rows=True)
    create_table(con, "runs", f"{part_select} LIMIT 0", [source, 0, 0])
    committed = [threading.Event() for _ in range(n_parts)]
    failed: list[bool] = [False] * n_parts

    def part(i: int) -> None:
        with con.cursor() as cursor:
            cursor.execute("BEGIN TRANSACTION")
            try:
                with _reading(source):
                    cursor.execute(f'INSERT INTO "runs" {part_select}', [source, i * rows // n_parts, (i + 1) * rows // n_parts])
                if i:
                    committed[i - 1].wait()
                    if failed[i - 1]:
                        raise RuntimeError("an earlier part of runs failed to copy")  # its own error is raised first
                cursor.execute("COMMIT")
            except BaseException:
                failed[i] = True
                with contextlib.suppress(duckdb.Error):  # a failed COMMIT has ended the transaction already
                    cursor.execute("ROLLBACK")
                raise
            finally:
                committed[i].set()

    return [functools.partial(part, i) for i in range(n_parts)]


@contextlib.contextmanager
def _reading(source: str) -> Iterator[None]:
    """Tell a damaged Parquet file (its footer read, see _parquet_source; its data does not) from any other error."""
    try:
        yield
    except duckdb.Error:  # random damage raises any of its kinds; parquet_reads below tells
        damaged = Path(source)
        if not damaged.is_file() or store.parquet_reads(damaged):
            raise  # not the table's damage (a full disk, say)
        # DuckDB's message is not one line. The file in the tables' build is removed (under the writer lock), so that
        # their next build finds that build damaged and makes it again.
        damaged.resolve().unlink(missing_ok=True)
        raise store.DamagedFile(
            f"{source} is damaged (its data does not read) and was removed: materialize the tables "
            "(or everything), which rebuild it from the staging",
            damaged,
        ) from None


# Columns computed beside a Parquet column as the file is loaded: the numeric x value, so that "the largest size"
# needs no TRY_CAST (null when the text is not a finite number).
COMPUTED_AFTER = {
    ("runs", "x_value"): "CASE WHEN isfinite(TRY_CAST(x_value AS DOUBLE)) THEN TRY_CAST(x_value AS DOUBLE) END AS x_value_num"
}


def _select_all(con: duckdb.DuckDBPyConnection, table: str, source: str, rows: bool = False) -> str:
    """The SELECT that loads `table` from its Parquet `source` (the one parameter): every column, each computed one
    of COMPUTED_AFTER right after the column it is computed from. With `rows`, only the file's rows from the second
    parameter and before the third."""
    read = "read_parquet(?, union_by_name = true)"
    if not rows and not any(name == table for name, _ in COMPUTED_AFTER):
        return f"SELECT * FROM {read}"
    columns = [column for column, *_ in con.execute(f"DESCRIBE SELECT * FROM {read}", [source]).fetchall()]
    listed = []
    for column in columns:
        listed.append(f'"{column}"')
        if computed := COMPUTED_AFTER.get((table, column)):
            listed.append(computed)
    if rows:
        read = "read_parquet(?, union_by_name = true, file_row_number = true) WHERE file_row_number >= ? AND file_row_number < ?"
    return f"SELECT {', '.join(listed)} FROM {read}"


def create_table(con: duckdb.DuckDBPyConnection, name: str, select: str, params: list | None = None) -> None:
    """CREATE TABLE name AS select, with ZSTD_COLUMNS compressed by zstd (a CTAS cannot say so).

    Inserted in the order `select` gives when the connection preserves insertion order.
    """
    columns = con.execute(f"DESCRIBE {select}", params).fetchall()
    definitions = ", ".join(
        f'"{column}" {type_}' + (" USING COMPRESSION zstd" if column in ZSTD_COLUMNS else "") for column, type_, *_ in columns
    )
    con.execute(f'CREATE TABLE "{name}" ({definitions})')
    con.execute(f'INSERT INTO "{name}" {select}', params)


def _runs_in_run_id_order(con: duckdb.DuckDBPyConnection) -> bool:
    """True when runs' rowid order is run_id order, as the tables are written: one pass, no sort.

    The previous row's rowid is compared too, so a scan that did not follow rowid order fails the test.
    """
    (disorders,) = con.execute(
        "SELECT count(*) FROM (SELECT rowid AS row_id, run_id, lag(rowid) OVER () AS previous_row,"
        " lag(run_id) OVER () AS previous_run_id FROM runs)"
        " WHERE previous_row <> row_id - 1 OR previous_run_id >= run_id OR run_id IS NULL"
    ).fetchone()
    return disorders == 0


@dataclass(frozen=True)
class Reuse:
    """Statistics an earlier warehouse.duckdb holds with the keys this build gives them (`statistic_versions`): the same
    code over the same tables and inputs, so the same rows. A change to one statistic's SQL computes that one (and
    those that read it) and copies the rest, change points included. `kept`: those of them a run that selected
    others copies as they are, a view included (its definition, which the current SQL may no longer be)."""

    database: Path | None = None
    statistics: frozenset[str] = frozenset()
    kept: frozenset[str] = frozenset()

    def copied(self) -> frozenset[str]:
        """The statistics whose rows are copied: a view is made again (it is its SQL) unless kept, and the series
        statistics are computed together, so both are copied or neither."""
        tables = frozenset() if self.database is None else self.statistics - set(VIEWS)
        return tables if set(SERIES_STATISTICS) <= tables else tables - set(SERIES_STATISTICS)

    def kept_views(self) -> frozenset[str]:
        """The views whose definition is copied from the earlier file."""
        return frozenset() if self.database is None else self.kept & set(VIEWS)


def _create_statistics(con: duckdb.DuckDBPyConnection, baselines: Sequence[str], reuse: Reuse) -> dict[str, float]:
    """Make the statistics; return the seconds each intermediate and stored statistic took (the bench's
    breakdown of the statistics SQL, timed here so that it costs no second build)."""
    copied = reuse.copied()
    kept_views = reuse.kept_views()
    if copied or kept_views:
        con.execute("ATTACH ? AS earlier (READ_ONLY)", [str(reuse.database)])
    con.execute(sql_files.text("macros"))
    # A bound parameter, never spliced into SQL text; the statistics read getvariable('baselines').
    con.execute("SET VARIABLE baselines = ?::VARCHAR[]", [list(baselines)])
    # No statistic relies on the order its rows are stored in; those that keep one say ORDER BY.
    con.execute("SET preserve_insertion_order = false")
    # Views for readers, not statistics (readable_runs, commit_places): first, since the series read commit_places.
    for name in sql_files.names("views"):
        con.execute(f'CREATE VIEW "{name.removeprefix("views/")}" AS\n{sql_files.text(name)}')
    seconds: dict[str, float] = {}
    shared = [name for name in INTERMEDIATES if name not in INTERMEDIATES_BY_RANGES.values()]
    for name in shared:
        started = time.perf_counter()
        _create_temp_table(con, name, sql_files.text(f"statistics/{name}"))
        seconds[name] = time.perf_counter() - started
    for name in sorted(copied):
        create_table(con, name, f'SELECT * FROM earlier."{name}"')
    # The ranges of groups the series, the window statistics and group_summary are read in, about RANGE_ROWS runs each.
    ranged = not copied >= {*SERIES_STATISTICS, *BY_GROUP_RANGES, *INTERMEDIATES_BY_RANGES}
    ranges = series_tables.group_ranges(con) if ranged else []
    if not set(SERIES_STATISTICS) <= copied:
        # Series noise and change points (SPEC section 8), computed in Python before the SQL that reads them.
        seconds.update(series_tables.build(con, baselines, create_table, ranges))
    for name in STATISTICS:
        if name in SERIES_STATISTICS or name in copied:
            continue
        if name in INTERMEDIATES_BY_RANGES:
            started = time.perf_counter()
            intermediate = INTERMEDIATES_BY_RANGES[name]
            select = sql_files.text(f"statistics/{intermediate}")
            _create_by_ranges(con, intermediate, select, ranges, _create_temp_table)
            seconds[intermediate] = time.perf_counter() - started
        started = time.perf_counter()
        if name in kept_views:
            con.execute(_earlier_view(con, name))
        elif name in VIEWS:
            con.execute(f'CREATE VIEW "{name}" AS\n{sql_files.text(f"statistics/{name}")}')
        elif name in STORED_ORDER:
            _create_in_stored_order(con, name, ranges)
        elif name in WHOLE_OR_BY_RANGES:
            _create_whole_or_by_ranges(con, name, ranges)
        else:
            create_table(con, name, sql_files.text(f"statistics/{name}"))
        seconds[name] = time.perf_counter() - started
        if name in INTERMEDIATES_BY_RANGES:
            con.execute(f'DROP TABLE "{INTERMEDIATES_BY_RANGES[name]}"')
    for name in shared:
        con.execute(f'DROP TABLE "{name}"')
    if copied or kept_views:
        con.execute("DETACH earlier")
    return seconds


def _create_in_stored_order(con: duckdb.DuckDBPyConnection, name: str, ranges: Sequence[dict[str, str | None]]) -> None:
    """Make statistic `name` from runs read in the order it is stored, with no sort; keep it when it has the rows its
    count says (db.STORED_ORDER), else sort runs into that order, one range of groups at a time, and make it again."""
    count_sql, sorted_runs_sql = STORED_ORDER[name]
    select = sql_files.text(f"statistics/{name}")
    _create_reading_in_order(con, name, select)
    (expected,) = con.execute(sql_files.text(count_sql)).fetchone()
    if _row_count(con, name) == expected:
        return
    con.execute(f'DROP TABLE "{name}"')
    # A temporary `runs` stands in for the stored one: DuckDB looks in temp first, so the statistic's SQL is the same.
    # Named so only once sorted: before, `runs` (even `main.runs`, temp's schema is main too) must be the stored one.
    sorted_runs = sql_files.text(sorted_runs_sql)
    con.execute("SET preserve_insertion_order = true")
    try:
        for i, bounds in enumerate(ranges or [WHOLE]):
            into = "CREATE TEMP TABLE sorted_runs AS" if i == 0 else "INSERT INTO temp.sorted_runs"
            con.execute(f"{into} {sorted_runs}", bounds)
        con.execute("ALTER TABLE temp.sorted_runs RENAME TO runs")
        _create_reading_in_order(con, name, select)
    finally:
        con.execute("SET preserve_insertion_order = false")
        con.execute("DROP TABLE IF EXISTS temp.sorted_runs")
        con.execute("DROP TABLE IF EXISTS temp.runs")


def _create_whole_or_by_ranges(con: duckdb.DuckDBPyConnection, name: str, ranges: Sequence[dict[str, str | None]]) -> None:
    """Make statistic `name` at once; where DuckDB runs out of memory, one range of groups at a time (WHOLE_OR_BY_RANGES)."""
    select = sql_files.text(f"statistics/{name}")
    try:
        create_table(con, name, select, WHOLE)
    except duckdb.OutOfMemoryException:
        con.execute(f'DROP TABLE IF EXISTS "{name}"')
        _create_by_ranges(con, name, select, ranges, create_table)


def _create_by_ranges(
    con: duckdb.DuckDBPyConnection,
    name: str,
    select: str,
    ranges: Sequence[dict[str, str | None]],
    create: Callable[[duckdb.DuckDBPyConnection, str, str, dict[str, str | None]], None],
) -> None:
    """`create(name, select)` one range of groups at a time: `select` takes `$lo` and `$hi` (a
    range's first group and the first group after it, null: no bound), as the series queries do."""
    for i, bounds in enumerate(ranges):
        if i == 0:
            create(con, name, select, bounds)
        else:
            con.execute(f'INSERT INTO "{name}" {select}', bounds)


def _create_temp_table(con: duckdb.DuckDBPyConnection, name: str, select: str, params: dict[str, str | None] | None = None) -> None:
    con.execute(f'CREATE TEMP TABLE "{name}" AS\n{select}', params)


def _create_reading_in_order(con: duckdb.DuckDBPyConnection, name: str, select: str) -> None:
    """create_table(name, select), reading its tables in the order they are stored."""
    # The one statement whose rows depend on the order it reads in: rowid order, not whichever order the threads take.
    con.execute("SET preserve_insertion_order = true")
    # Its LEFT JOIN builds its hash table from the right side (series_noise, one row per series), as written: DuckDB's
    # own choice built it from the runs, run ids and all, and spilled them (3M runs: 35 CPU-s against 9, 500 MB written).
    con.execute("SET disabled_optimizers = 'build_side_probe_side'")
    try:
        create_table(con, name, select)
    finally:
        con.execute("RESET disabled_optimizers")
        con.execute("SET preserve_insertion_order = false")


def _earlier_view(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """The CREATE VIEW statement of view `name` in the earlier file: its names resolve in the file being built."""
    (sql,) = con.execute("SELECT sql FROM duckdb_views() WHERE database_name = 'earlier' AND view_name = ?", [name]).fetchone()
    return sql


def _row_count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    (count,) = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()
    return int(count)
