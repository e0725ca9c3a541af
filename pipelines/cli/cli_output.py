"""What the command line writes, and the errors it reports in one line.

`python -m pipelines` turns `UserError` (and `UsageError`, exit 2), an output file it cannot write and a
standard output that fails (a closed pipe, a full disk) into one line on stderr, in one place: its main().
The commands raise; they do not print their own errors.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipelines.core.errors import UserError
from pipelines.storage import store


class UsageError(UserError):
    """The command was given wrong: an argument or its value (exit code 2, as argparse's own)."""

    exit_code = 2


class StandardOutputError(Exception):
    """Writing to standard output failed: the reader went away (`| head`) or the disk is full."""

    def __init__(self, cause: OSError):
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


class GuardedStream:
    """A stream whose write errors say they come from standard output.

    An OSError raised by a write names no file, so without this a full stdout and a full
    output file would read alike.
    """

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            return self._stream.write(data)
        except OSError as exc:
            raise StandardOutputError(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise StandardOutputError(exc) from exc

    @property
    def buffer(self) -> GuardedStream:
        return GuardedStream(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFDIR: "a folder",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
}


def special_kind(path: Path) -> str | None:
    """What `path` is when it exists and is not a regular file ("a symbolic link", "a folder", ...), else None.

    A symbolic link counts as itself, not as what it points to: renaming a file over it replaces the link.
    """
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None  # nothing there; a folder that cannot be made is said when writing
    if stat.S_ISREG(mode):
        return None
    return KINDS.get(stat.S_IFMT(mode), "not a regular file")


def refuse_special_file(path: Path) -> None:
    """Refuse an output path that holds anything but a writable regular file: the atomic write would replace it
    (a read-only file too: renaming over it needs only the folder's permission, not the file's)."""
    kind = special_kind(path)
    if kind is not None:
        raise UserError(f"{path} is {kind}, not a regular file: it is left as it is; give the path of a new or regular file")
    if read_only(path):
        raise UserError(f"{path} is read-only: it is left as it is; make it writable (chmod u+w) or give another path")


def read_only(path: Path) -> bool:
    """Whether a file is there that its mode, or this user's access, says must not be written (root passes every
    access check: a file no one may write counts as read-only for root too)."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    return not mode & 0o222 or not os.access(path, os.W_OK)


@contextlib.contextmanager
def writing(target: Path) -> Iterator[None]:
    """An OSError inside becomes one line naming `target` (the file or folder the user asked for)."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UserError(f"cannot write {target}: {reason}; choose a folder you can write to, with free space") from exc


def write_file(path: Path, data: bytes) -> None:
    """Write `path` atomically (its folders made), unless something other than a writable regular file is there."""
    refuse_special_file(path)
    with writing(path):
        replace_keeping_mode(path, data)


def replace_keeping_mode(path: Path, data: bytes) -> None:
    """Write `path` atomically; a file already there keeps its permissions and owner (store.write_bytes_atomic)."""
    try:
        before = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        before = None
    store.write_bytes_atomic(path, data, like=before)


def check_output_folder(folder: Path, pattern: str) -> None:
    """Refuse a folder that is not one, or whose files matching `pattern` (those a command replaces) are not regular."""
    kind = special_kind(folder)
    if kind is not None and not folder.is_dir():  # a symbolic link to a folder is a folder to write into
        raise UserError(f"{folder} is {kind}, not a folder: give a folder to write into")
    if kind is None and folder.exists():
        raise UserError(f"{folder} is a file, not a folder: give a folder to write into")
    if folder.is_dir():
        for entry in sorted(folder.glob(pattern)):
            refuse_special_file(entry)  # a read-only one too: it would be replaced, or removed
