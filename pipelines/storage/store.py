"""Atomic writes to the warehouse folder.

Every file is written under a temporary name and renamed into place; `sweep` deletes what a killed writer left
under a temporary name. A set of files that must change together is a build (`storage.builds`), published by
one rename.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.core import layout
from pipelines.core.layout import Layout

TMP_MARK = ".tmp-"


class DamagedFile(Exception):
    """A warehouse file that is not what was written there (truncated, overwritten, emptied).

    Its message is one line that names the file and says what the next run does about it or what a
    person must do; never the file's bytes. `path` is the damaged file or folder."""

    def __init__(self, message: str, path: Path | None = None):
        super().__init__(message)
        self.path = path


def parquet_rows(path: Path) -> int | None:
    """The row count a Parquet file's footer records; None when the file is missing or its footer
    does not read (truncated, overwritten, not Parquet). Reads the footer only, not the data."""
    try:
        return pq.read_metadata(path).num_rows
    except (OSError, ValueError, pa.ArrowException):
        return None


def parquet_reads(path: Path) -> bool:
    """Whether a whole Parquet file reads, data included (costly: for telling damage from other errors)."""
    try:
        pq.ParquetFile(path).read()
    except (OSError, ValueError, pa.ArrowException):
        return False
    return True


def read_json(path: Path) -> object | None:
    """A JSON file written by this package; None when it is missing or does not parse (its bytes are
    never shown: a damaged file may hold anything)."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None


def read_state(path: Path) -> dict:
    """A state file (a dict); {} when it is missing or damaged, which only costs a rebuild."""
    state = read_json(path)
    return state if isinstance(state, dict) else {}


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


def temp_path(final: Path) -> Path:
    return final.with_name(f".{final.name}{TMP_MARK}{secrets.token_hex(6)}")


def write_bytes_atomic(final: Path, data: bytes, like: os.stat_result | None = None) -> None:
    """Write `final` whole or not at all. With `like` (the file it replaces), the new file is made with that file's
    permissions (and owner, where this user may give it) before it is renamed into place, never looser for a moment."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(final)
    try:
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666 if like is None else 0o600), "wb") as handle:
            if like is not None:
                with contextlib.suppress(PermissionError):
                    os.fchown(handle.fileno(), like.st_uid, like.st_gid)
                os.fchmod(handle.fileno(), stat.S_IMODE(like.st_mode))
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except BaseException:
        # A failed write (a full disk, `final` a folder) leaves nothing behind: outside the
        # warehouse no `sweep` would ever delete the temporary file.
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(final.parent)


def write_json_atomic(final: Path, value: object) -> None:
    write_bytes_atomic(final, json.dumps(value, indent=2, sort_keys=True, default=str).encode())


def swap_folder(staging: Path, final: Path) -> None:
    """Put the complete folder `staging` in the place of `final` (a folder, a file or nothing), then delete the old one.

    The old one is renamed aside under `temp_path`, not deleted in place: `final` is missing only between two
    renames, never while a large folder is deleted, and a process killed before the deletion leaves a name
    that `sweep` (or the caller's own) removes.
    """
    old = temp_path(final) if final.exists() or final.is_symlink() else None
    if old is not None:
        os.rename(final, old)
    os.rename(staging, final)
    fsync_dir(final.parent)
    if old is None:
        return
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink(missing_ok=True)


def write_parquet(frame: pl.DataFrame | pl.LazyFrame, path: Path, compression_level: int | None = None, statistics: bool = True) -> None:
    if isinstance(frame, pl.LazyFrame):
        frame.sink_parquet(path, compression="zstd", compression_level=compression_level, statistics=statistics, engine="streaming")
    else:
        frame.write_parquet(path, compression="zstd", compression_level=compression_level, statistics=statistics)
    fsync_file(path)


class ParquetAppender:
    """One Parquet file written frame by frame, so a table bigger than memory is written without holding it.

    Every frame must have `schema`; zstd at Arrow's default level, which is several times faster to
    write than polars' default and reads back the same. Columns named `unique` (nearly every value
    distinct) get no dictionary, which would only be built to be dropped, and, when they are texts,
    no min/max statistics, which cost as much as compressing them and prune nothing. The other
    columns' dictionaries make the file cheaper to write and to read back. The column the rows arrive
    `sorted_by` keeps its min/max statistics even when unique: each row group then covers its own range
    of values, and a lookup by that column (a run by run_id) reads one row group, not all. A file that is not `durable`
    (scratch, deleted before the run ends) is not flushed to disk when closed.
    """

    def __init__(
        self,
        path: Path,
        schema: pl.Schema,
        unique: tuple[str, ...] = (),
        compression: str = "zstd",
        statistics: bool = True,
        durable: bool = True,
        sorted_by: str | None = None,
    ):
        self.path = path
        self.rows = 0
        self.durable = durable
        self._schema = pl.DataFrame(schema=schema).to_arrow(compat_level=pl.CompatLevel.newest()).schema
        self._writer = pq.ParquetWriter(
            path,
            self._schema,
            compression=compression,
            use_dictionary=[c for c in schema if c not in unique],
            write_statistics=[c for c in schema if c == sorted_by or not (c in unique and schema[c] == pl.String)] if statistics else False,
        )

    def __enter__(self) -> ParquetAppender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def write(self, frame: pl.DataFrame) -> None:
        if frame.height:
            self._writer.write_table(frame.to_arrow(compat_level=pl.CompatLevel.newest()).cast(self._schema))
            self.rows += frame.height

    def close(self) -> None:
        if self._writer.is_open:
            self._writer.close()
            if self.durable:
                fsync_file(self.path)


def sweep(directory: Path) -> None:
    """Delete the temporary files and folders a killed writer left in `directory`."""
    if directory.exists():
        for stray in directory.glob(f".*{TMP_MARK}*"):
            if stray.is_dir() and not stray.is_symlink():
                shutil.rmtree(stray, ignore_errors=True)
            else:
                stray.unlink(missing_ok=True)


def _forget_former_stamps(directory: Path) -> None:
    for name in layout.FORMER_STAMPS:
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def writer_lock(directory: Path) -> Iterator[None]:
    """One writer at a time per warehouse, across processes; the OS drops it if the process dies."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(Layout(directory).lock, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            sweep(directory)
            # Every stage's, not only those this writer builds: a run killed in the report, then an ingest that stops
            # at the database, would leave the report's half-made build until the next report.
            for stage in Layout(directory).build_stages():
                sweep(stage)
            _forget_former_stamps(directory)
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
