"""What every source gives and raises: the snapshots it lists, and errors a person can act on."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


class SourceError(RuntimeError):
    """The source cannot be read; the message is one line a person can act on."""


class BranchNotFound(SourceError):
    """The source answers but has no such branch: the setting to fix is LIGER_BRANCH, and retrying cannot help."""

    def __init__(self, source: str, branch: str):
        super().__init__(
            f"branch {branch!r} was not found in the Liger benchmark source {source!r}; set LIGER_BRANCH to one of its branches"
        )


class ShallowSource(SourceError):
    """The source shows only part of its history: reading it would call its oldest commit upstream's first."""

    def __init__(self, source: str, branch: str):
        super().__init__(
            f"the Liger benchmark source {source!r} is a shallow clone (branch {branch!r} lacks its older history): "
            "run `git fetch --unshallow` in it, or set LIGER_SOURCE to a full clone or upstream's URL"
        )


class DeadlineExceeded(SourceError):
    """A step ran past its deadline; trying again at once would only wait as long again."""

    def __init__(self, step: str, seconds: float):
        super().__init__(f"{step} did not finish within {seconds:g} s (the source stalled or is too slow); try again later")


@dataclass(frozen=True)
class SnapshotRef:
    snapshot_id: str
    source: str
    source_file: str
    commit: str | None
    committed_at: datetime | None
    subject: str | None
    sequence: int
    # The content's sha256 when listing it already took one (a CSV source hashes its file to name
    # the snapshot), so staging need not read a large file twice for it.
    content_sha256: str | None = None
    # Which of the source's streams lists it (SPEC section 7): `data`, `ci`, or `file` for a plain CSV source.
    stream: str = "data"
    # What a CI folder's name says (`benchmarks/<commit>[-v<release>]/`); None elsewhere.
    benchmarked_commit: str | None = None
    release: str | None = None
    # Where the benchmarked commit sits in the data stream's branch (`main`), when that branch holds it (its own
    # id, or an `Upstream-Commit:` trailer naming it): the commit there, its first-parent position (1: the root)
    # and its commit time. Read from the branch as it is now at each sync, never staged.
    main_commit: str | None = None
    main_position: int | None = None
    main_committed_at: datetime | None = None


@dataclass(frozen=True)
class MainCommit:
    """One commit of the data stream's branch on its first-parent line, oldest first: `position` 1 is the root."""

    commit: str
    position: int
    committed_at: datetime
    # The ids its `Upstream-Commit:` trailers name (a filtered copy of upstream names the real commit so).
    upstream_commits: tuple[str, ...] = ()


@dataclass(frozen=True)
class Listing:
    """What the source holds now: its snapshots, oldest first, and the files present at its head."""

    head: str | None
    snapshots: tuple[SnapshotRef, ...]
    files_at_head: tuple[str, ...]
    # The snapshot holding each file's content at head, where the source can tell (a file can return to a content it
    # had before, which is no new snapshot); None: a file's newest snapshot is its content at head.
    head_snapshots: tuple[str, ...] | None = None


class CacheDiskFull(SourceError):
    """The disk of the cache folder is full: the source is fine, retrying cannot help, and the fix is space."""

    def __init__(self, folder: Path, detail: str):
        super().__init__(
            f"no space left on the disk of the cache folder {folder} ({detail}): free space there, "
            "or set LIGER_CACHE_DIR to a folder on a disk with room"
        )


# How git (run with LC_ALL=C) and the OS say a write found no room: a full disk, or the user's quota spent.
DISK_FULL = (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT))


def unreachable(source: str, detail: str, cache: Path | None = None) -> SourceError:
    """The error of a source that did not answer; a write into `cache` (the folder the copy goes to) that found its
    disk full is a CacheDiskFull instead, naming that folder, not the source."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    full = next((line for line in lines if any(text in line for text in DISK_FULL)), None)
    if cache is not None and full is not None:
        return CacheDiskFull(cache, full)
    # git explains itself over several lines; the first one names the problem.
    detail = lines[0] if lines else "no answer"
    return SourceError(
        f"cannot read the Liger benchmark source {source!r} ({detail}); "
        "set LIGER_SOURCE to a reachable git URL, local clone, git bundle, CSV file or http(s) CSV URL"
    )
