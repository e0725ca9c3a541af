"""The warehouse's DuckDB file: what it holds (the tables, the statistics of SPEC section 6 and their
checks, one registry) and reading it, read-only; `database_build` writes it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipelines.core import schemas, sql_files
from pipelines.core.layout import Layout

TABLES: tuple[str, ...] = tuple(schemas.TABLES)
# Statistics stored as views: a view of runs costs no more to read than a copy of it would.
VIEWS: tuple[str, ...] = ("run_noise",)
# Statistics computed in Python (pipelines/series: SPEC section 8) from the series that sql/series/ reads,
# before the SQL statistics, which may read them (version_changes judges drifts by series_noise).
SERIES_STATISTICS: tuple[str, ...] = ("series_noise", "change_points")
# Every statistic, in an order that puts each after those it reads (`lineage` derives the edges from the SQL and
# tests/test_statistics_lineage.py holds this order to them); each also reads the tables.
STATISTICS: tuple[str, ...] = (
    "series_noise",
    "change_points",
    "run_noise",
    "provider_comparisons",
    "comparable_groups",
    "kernel_scorecard",
    "sweep_comparisons",
    "version_changes",
)
# Temporary tables the statistics read, computed once per build and not kept in the file.
INTERMEDIATES: tuple[str, ...] = ("latest_runs", "group_summary")
# Intermediates made just before the one statistic that reads them, and dropped after it, one range of groups at a
# time (their SQL takes `$lo` and `$hi`): DuckDB keeps a median's values in memory, every group's, and cannot spill
# them, so a range holds about series_tables.RANGE_ROWS runs' values whatever the warehouse's size.
INTERMEDIATES_BY_RANGES: dict[str, str] = {"comparable_groups": "group_summary"}
# Statistics made first from runs in the order it is stored, with no sort, then counted (the SQL that says how many
# rows they must have); where the count differs, made again from runs sorted first (`database_build`).
STORED_ORDER: dict[str, tuple[str, str]] = {
    "version_changes": ("statistics/version_changes_rows", "statistics/version_changes_sorted_runs")
}


def statistic_sql(name: str) -> str:
    """The SQL file (as sql_files names it) that says what a statistic is: its own, or for a series
    statistic the file that writes it back."""
    return f"series/{name}" if name == "change_points" else "series/series" if name in SERIES_STATISTICS else f"statistics/{name}"


# Each check file returns the offending rows, with the table they concern in `table_name`.
CHECKS: dict[str, tuple[str, ...]] = {
    "group_runs_consistent": ("comparable_groups",),
    "ratios_positive_finite": (
        "comparable_groups",
        "provider_comparisons",
        "kernel_scorecard",
        "sweep_comparisons",
        "version_changes",
    ),
    "scorecard_counts_add_up": ("kernel_scorecard",),
    "change_points_consistent": ("change_points", "series_noise"),
}


class WarehouseMissing(FileNotFoundError):
    """The database (or a Parquet table it is built from) does not exist yet."""


@dataclass(frozen=True)
class Result:
    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@dataclass(frozen=True)
class SqlCheckResult:
    """The rows that fail one SQL check (sql/checks/) of one statistic; the Parquet tables' checks are checks.CheckOutcome."""

    check: str
    table: str
    failures: list[dict[str, Any]]

    @property
    def passed(self) -> bool:
        return not self.failures


def database_path(warehouse_dir: Path) -> Path:
    """`Layout(warehouse_dir).database`, kept for the many callers that open the file by its warehouse."""
    return Layout(warehouse_dir).database


@contextlib.contextmanager
def open_readonly(warehouse_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to warehouse.duckdb that can only read, closed on exit.

    The file is ATTACHed to a fresh in-memory database rather than opened with
    `duckdb.connect(path)`: connect() reuses an instance already open on that
    path in this process, which after a rebuild is the old, replaced file.
    """
    path = Layout(warehouse_dir).database
    if not path.is_file():
        raise WarehouseMissing(f"{path} does not exist yet: materialize the statistics assets first")
    with duckdb.connect() as con:
        con.execute("ATTACH ? AS warehouse (READ_ONLY)", [str(path)])
        con.execute("USE warehouse")
        # The file holds every table: a query needs no other file, and none may be read or written.
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        yield con


@dataclass(frozen=True)
class Session:
    """Queries on one read-only connection: attaching the file costs more than a small query."""

    con: duckdb.DuckDBPyConnection

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Result:
        _only_reads(self.con, sql)
        cursor = self.con.execute(sql, params) if params is not None else self.con.execute(sql)
        description = cursor.description or []
        return Result(
            columns=[column[0] for column in description],
            types=[str(column[1]) for column in description],
            rows=cursor.fetchall(),
        )

    def describe(self, table: str) -> list[tuple[str, str]]:
        """(column, DuckDB type) of a table in warehouse.duckdb."""
        result = self.query(f'SELECT * FROM "{table}" LIMIT 0')
        return list(zip(result.columns, result.types, strict=True))

    def preview(self, table: str, n: int = 5) -> Result:
        """The most telling rows of a statistic (`sql/previews/<table>.sql`): its biggest wins and regressions."""
        return self.query(sql_files.text(f"previews/{table}"), {"n": n})

    def run_checks(self) -> list[SqlCheckResult]:
        """Every check of `CHECKS`, once per table it covers."""
        outcomes = []
        for check, tables in CHECKS.items():
            failures = self.query(sql_files.text(f"checks/{check}")).records()
            for table in tables:
                mine = [row for row in failures if row["table_name"] == table]
                outcomes.append(SqlCheckResult(check=check, table=table, failures=mine))
        return outcomes


@contextlib.contextmanager
def session(warehouse_dir: Path) -> Iterator[Session]:
    with open_readonly(warehouse_dir) as con:
        yield Session(con)


def query(warehouse_dir: Path, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Result:
    """Run one read-only query on warehouse.duckdb."""
    with session(warehouse_dir) as reader:
        return reader.query(sql, params)


def _only_reads(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse any statement but a query: USE, DETACH and ATTACH could reopen the file writable.

    Every statement is vetted before any runs; a refused one is named by its own keyword,
    since DuckDB's statement types lump several together (INSTALL is a LOAD, USE a SET).
    """
    statements = con.extract_statements(sql)
    if not statements:
        raise NoStatement('no SQL statement in the query (it is empty, or only comments): give one, e.g. "SELECT * FROM runs LIMIT 5"')
    for statement in statements:
        try:
            kind = statement.type
        except ValueError:  # a statement type newer than the duckdb Python enum (UPDATE EXTENSIONS)
            kind = None
        if kind not in (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN):
            name = statement_name(statement.query, kind.name if kind is not None else "UNKNOWN")
            raise duckdb.PermissionException(
                f"the warehouse is read-only here: {name} statements are not run, only queries "
                "(SELECT, FROM, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)"
            )


class NoStatement(ValueError):
    """The SQL text holds no statement: it is empty, or only comments and semicolons."""


# Comments, blanks and opening parentheses before a statement's first keyword.
_BEFORE_KEYWORD = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/|\()*", re.DOTALL)
_KEYWORDS = re.compile(r"([A-Za-z_]+)(?:\s+([A-Za-z_]+))?")


def statement_name(text: str, type_name: str) -> str:
    """What a statement is, as its user wrote it: its first keyword (INSTALL, USE, TRUNCATE, ...).

    Two words where the first alone would mislead (FORCE INSTALL, UPDATE EXTENSIONS); DuckDB's
    `type_name` where the text opens with common table expressions (WITH ... DELETE).
    """
    words = _KEYWORDS.match(text, _BEFORE_KEYWORD.match(text).end())
    if words is None:
        return type_name
    first, second = words.group(1).upper(), (words.group(2) or "").upper()
    if first == "WITH":
        return type_name
    if first == "FORCE" or (first, second) == ("UPDATE", "EXTENSIONS"):
        return f"{first} {second}".strip()
    return first


def run_checks(warehouse_dir: Path) -> list[SqlCheckResult]:
    with session(warehouse_dir) as reader:
        return reader.run_checks()
