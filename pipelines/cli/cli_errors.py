"""Every error a user can cause, as the one line `python -m pipelines` prints on stderr.

The line names the file or setting and the fix; the stack is shown only with `--verbose` (main() prints it
before the line). `outcome` tells an error a user can act on (its exit code and line) from a bug (None: the
traceback is the report). Damaged tables are named by looking at their files after a read failed, never by
quoting the reader's message, which can hold the damaged bytes.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from pipelines.cli.cli_output import UsageError
from pipelines.core import instance
from pipelines.core.errors import UserError
from pipelines.core.layout import Layout
from pipelines.core.settings import SettingError
from pipelines.exports import liger_csv
from pipelines.statistics import db
from pipelines.storage import store

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process that Ctrl-C ended
INTERRUPTED = "interrupted; the last good warehouse is kept"
MATERIALIZE = "`python -m pipelines materialize`"

# Errors a user can act on, each shown as its one-line message: usage errors (and settings) exit 2, the others 1.
USAGE_ERRORS: tuple[type[Exception], ...] = (UsageError, SettingError, db.NoStatement)
FAILURES: tuple[type[Exception], ...] = (UserError, db.WarehouseMissing, liger_csv.ExportError, duckdb.Error, instance.InstanceTaken)
# What DuckDB raises on a file that is not what was written: cut short, or bytes that fail their checksum.
DAMAGE: tuple[type[Exception], ...] = (duckdb.IOException, duckdb.SerializationException)
# How DuckDB words a database file whose bytes changed after it was written (a plain duckdb.Error, whose
# message names a block, not the file).
CORRUPT_DATABASE = ("Corrupt database file", "does not match stored checksum")
UNREADABLE_TABLE: tuple[type[Exception], ...] = (pl.exceptions.PolarsError, pa.ArrowException)


def one_line(message: str) -> str:
    """A message of several lines (DuckDB's: the error, its candidates, the query with a caret under it) as one:
    its first line, then the others in parentheses; lines of carets alone point at nothing once joined."""
    lines = [line.strip() for line in message.splitlines() if line.strip() and set(line.strip()) != {"^"}]
    if len(lines) <= 1:
        return lines[0] if lines else message.strip()
    return f"{lines[0]} ({'; '.join(lines[1:])})"


def damaged_table(warehouse: Path) -> UserError:
    """After a table failed to read: the first of the warehouse's tables whose footer or data does not read."""
    for path in sorted(warehouse.glob("*.parquet")):
        if store.parquet_rows(path) is None or not store.parquet_reads(path):
            return UserError(f"{path} is damaged (it does not read as Parquet): run {MATERIALIZE}, which rebuilds it")
    return UserError(f"a table in {warehouse} does not read as the command expects: run {MATERIALIZE}, which rebuilds a damaged one")


def not_utf8(what: str, text: str) -> UsageError | None:
    """A UsageError when `text` (decoded with surrogateescape: an argument, standard input) holds bytes that are not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = ord(text[exc.start]) & 0xFF
        return UsageError(f"{what} is not UTF-8 text (byte 0x{byte:02x} at character {exc.start + 1}): give it as UTF-8")
    return None


def outcome(exc: BaseException, warehouse: Path | None) -> tuple[int, str] | None:
    """(exit code, the line on stderr) for an error a user can act on; None for any other (a bug)."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED, INTERRUPTED
    if isinstance(exc, USAGE_ERRORS):
        return 2, f"error: {one_line(str(exc))}"
    if isinstance(exc, UNREADABLE_TABLE) and warehouse is not None:
        return 1, f"error: {damaged_table(warehouse)}"
    if isinstance(exc, duckdb.Error) and warehouse is not None and any(mark in str(exc) for mark in CORRUPT_DATABASE):
        database = Layout(warehouse).database
        return 1, f"error: {database} is damaged (a block's checksum does not match): run {MATERIALIZE}, which rebuilds it"
    if isinstance(exc, DAMAGE):
        # DuckDB names the file it could not read (warehouse.duckdb, or a table's Parquet a view reads).
        return 1, f"error: {one_line(str(exc))}; if that file is damaged, run {MATERIALIZE}, which rebuilds it"
    if isinstance(exc, FAILURES):
        return 1, f"error: {one_line(str(exc))}"
    if isinstance(exc, OSError):  # a file or folder the command could not read or write, named by the error
        return 1, f"error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    return None
