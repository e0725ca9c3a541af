"""A git source: a bare clone in the cache, fetched on later runs, whose history of data files is its listing.

Every git call takes an argument list (never a shell string), the address
having been checked first (`address.classify`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from pipelines.core.kernel_backends import ci_folder
from pipelines.core.settings import DEFAULT_FILE_GLOB
from pipelines.ingest.source.address import git_url
from pipelines.ingest.source.listing import (
    BranchNotFound,
    DeadlineExceeded,
    Listing,
    MainCommit,
    ShallowSource,
    SnapshotRef,
    SourceError,
    unreachable,
)
from pipelines.ingest.source.retry import cache_lock, with_retries
from pipelines.storage import store

# Overall deadlines of the steps that wait on someone else: past one, the step fails with a SourceError
# naming it, instead of holding the warehouse's writer lock for as long as a stalled server likes.
GIT_DEADLINE_SECONDS = 600  # a clone or fetch (and any git command)
LS_REMOTE_DEADLINE_SECONDS = 120
# Git itself refuses every transport but these, whatever string reaches it.
GIT_PROTOCOLS = "file:http:https:ssh"
_SAFE_REF = re.compile(r"^[A-Za-z0-9._/-]+$")
_REGULAR_FILE_MODES = ("100644", "100755")
# A trailer that names the upstream commit a filtered copy's commit stands for (the offline bundle's `main`).
UPSTREAM_TRAILER = "Upstream-Commit"
_COMMIT_ID = re.compile(r"^[0-9a-f]{7,40}$")


def _git(
    args: list[str], cwd: Path | None = None, timeout: float | None = None, step: str | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run git; past `timeout` (GIT_DEADLINE_SECONDS) it and its helpers are killed and DeadlineExceeded names `step`."""
    timeout = GIT_DEADLINE_SECONDS if timeout is None else timeout
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C", "GIT_ALLOW_PROTOCOL": GIT_PROTOCOLS}
    if cwd is not None:
        # Never search upward: a broken clone inside the project's work tree would make git act on the project's repository.
        env["GIT_DIR"] = str(cwd)
    # Its own process group, so that a deadline also kills the transport helper (git-remote-http) git started.
    with subprocess.Popen(["git", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException as exc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            if isinstance(exc, subprocess.TimeoutExpired):
                where = f" in {cwd}" if cwd is not None else ""
                raise DeadlineExceeded(step or f"git {args[0]}{where}", timeout) from None
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _git_ok(args: list[str], cwd: Path | None = None) -> bytes:
    result = _git(args, cwd)
    if result.returncode != 0:
        raise SourceError(f"git {args[0]} failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout


class GitSource:
    def __init__(self, source: str, cache_dir: Path, branch: str, file_glob: str, stream: str = "data"):
        if not _SAFE_REF.match(branch) or branch.startswith("-") or ".." in branch:
            raise SourceError(f"branch name {branch!r} is not a plain git branch name")
        self.source = source
        self.url = git_url(source)
        self.branch = branch
        self.file_glob = file_glob
        self.stream = stream
        key = hashlib.sha256(f"{self.url}\n{branch}".encode()).hexdigest()[:16]
        self.clone_dir = cache_dir / f"git-{key}"

    @property
    def _ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def remote_head(self) -> str | None:
        """The branch head upstream, by a cheap `git ls-remote`; None when the branch is absent."""

        def ask() -> str | None:
            result = self._ls_remote()
            if result.returncode != 0:
                raise unreachable(self.source, result.stderr.decode(errors="replace").strip() or "git ls-remote failed")
            line = result.stdout.decode().strip()
            return line.split()[0] if line else None

        return with_retries(ask)

    def _ls_remote(self) -> subprocess.CompletedProcess[bytes]:
        return _git(["ls-remote", "--", self.url, self._ref], timeout=LS_REMOTE_DEADLINE_SECONDS, step=f"git ls-remote of {self.source}")

    def sync(self) -> None:
        """Clone into the cache once, fetch on later runs; a broken cache is cloned anew."""
        with cache_lock(self.clone_dir):
            # Left by a killed clone: its staging, or the old clone it was swapping out (store.swap_folder).
            for stale in [
                *self.clone_dir.parent.glob(f"{self._staging_prefix}*"),
                *self.clone_dir.parent.glob(f".{self.clone_dir.name}{store.TMP_MARK}*"),
            ]:
                shutil.rmtree(stale, ignore_errors=True)
            if not (self.clone_dir.is_dir() and self._fetch()):
                self._fresh_clone()
            self._deepen()

    def _deepen(self) -> None:
        """A shallow clone (of a shallow source) shows only its newest commits: its oldest would pass for upstream's
        first. Deepen it from the source; when the source itself is shallow, refuse it."""
        if _git(["rev-parse", "--is-shallow-repository"], self.clone_dir).stdout.strip() != b"true":
            return
        _git(["fetch", "--quiet", "--force", "--unshallow", "--", self.url, f"+{self._ref}:{self._ref}"], self.clone_dir)
        if _git(["rev-parse", "--is-shallow-repository"], self.clone_dir).stdout.strip() == b"true":
            raise ShallowSource(self.source, self.branch)

    @property
    def _staging_prefix(self) -> str:
        return f".clone-{self.clone_dir.name}-"

    def _fetch(self) -> bool:
        def fetch() -> bool:
            result = _git(
                ["fetch", "--quiet", "--force", "--", self.url, f"+{self._ref}:{self._ref}"],
                self.clone_dir,
                step=f"git fetch of {self.source}",
            )
            if result.returncode == 0:
                return True
            stderr = result.stderr.decode(errors="replace").strip()
            # The remote answers, so the clone is what is broken (corrupt, or a lock a killed fetch left).
            if self._ls_remote().returncode == 0:
                return False
            raise unreachable(self.source, stderr or "git fetch failed", cache=self.clone_dir.parent)

        if _git(["rev-parse", "--verify", "--quiet", self._ref], self.clone_dir).returncode != 0:
            return False
        fetched = with_retries(fetch)
        return bool(fetched) and _git(["fsck", "--connectivity-only", "--no-dangling", self._ref], self.clone_dir).returncode == 0

    def _fresh_clone(self) -> None:
        self.clone_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=self._staging_prefix, dir=self.clone_dir.parent))

        def clone() -> None:
            shutil.rmtree(staging, ignore_errors=True)
            result = _git(
                ["clone", "--bare", "--quiet", "--single-branch", "--branch", self.branch, "--", self.url, str(staging)],
                step=f"git clone of {self.source}",
            )
            if result.returncode != 0:
                answer = self._ls_remote()
                if answer.returncode == 0 and not answer.stdout.strip():
                    raise BranchNotFound(self.source, self.branch)
                raise unreachable(
                    self.source, result.stderr.decode(errors="replace").strip() or "git clone failed", cache=self.clone_dir.parent
                )

        try:
            with_retries(clone)
            # A bundle clone names the branch but may not keep it under refs/heads.
            if _git(["rev-parse", "--verify", "--quiet", self._ref], staging).returncode != 0:
                raise BranchNotFound(self.source, self.branch)
            store.swap_folder(staging, self.clone_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _data_path(self, path: str) -> str:
        """`path` below the glob's fixed folder (`benchmark/data/`): the file name for upstream's files, and
        distinct for two files of one commit that share a name in different folders."""
        fixed = re.split(r"[*?\[]", self.file_glob, maxsplit=1)[0].rpartition("/")[0]
        return path[len(fixed) + 1 :] if fixed and path.startswith(f"{fixed}/") else path

    def _matches(self, path: str) -> bool:
        return fnmatch.fnmatchcase(path, self.file_glob)

    def listing(self) -> Listing:
        """Every commit on the branch (first parent, oldest first) that gave a matching file a content it never had.

        Only regular files count: a submodule (gitlink) or symlink at a matching path holds no data. A file deleted
        and restored with the same bytes (upstream's documentation deploys wipe `gh-pages` and restore it) is no
        new snapshot: every distinct content of a path is one snapshot, named by the first commit that gave it
        that content; the listing says which snapshot holds each file's content at head.
        """
        head = _git_ok(["rev-parse", "--verify", self._ref], self.clone_dir).decode().strip()
        log = _git_ok(
            [
                "log",
                "--first-parent",
                "-m",
                "--reverse",
                "--no-renames",
                "--raw",
                "--no-abbrev",
                "-z",
                "--format=%x1e%H%x1f%cI%x1f%s",
                self._ref,
            ],
            self.clone_dir,
        ).decode("utf-8", errors="replace")
        snapshots: list[SnapshotRef] = []
        first_with: dict[tuple[str, str], str] = {}
        ever_matched = False
        for sequence, record in enumerate(r for r in log.split("\x1e") if r.strip()):
            header, _, changes = record.partition("\x00")
            commit, committed, subject = header.strip("\n").split("\x1f", 2)
            # --raw -z: ":<old mode> <new mode> <old sha> <new sha> <status>" then the path, each ended by NUL.
            fields = [f.strip("\n") for f in changes.split("\x00") if f.strip("\n")]
            for change, path in zip(fields[::2], fields[1::2]):
                if not self._matches(path):
                    continue
                ever_matched = True
                _, new_mode, _, blob, status = change.lstrip(":").split(" ")
                if status[0] in "AMT" and new_mode in _REGULAR_FILE_MODES and (path, blob) not in first_with:
                    first_with[path, blob] = f"{commit[:12]}/{self._data_path(path)}"
                    benchmarked, release = ci_folder(path) if self.stream == "ci" else (None, None)
                    snapshots.append(
                        SnapshotRef(
                            snapshot_id=first_with[path, blob],
                            source=self.source,
                            source_file=path,
                            commit=commit,
                            committed_at=datetime.fromisoformat(committed).astimezone(UTC),
                            subject=subject,
                            sequence=sequence + 1,
                            stream=self.stream,
                            benchmarked_commit=benchmarked,
                            release=release,
                        )
                    )
        if not ever_matched:
            raise SourceError(
                f"LIGER_FILE_GLOB {self.file_glob!r} matches no file in the history of branch {self.branch!r} of {self.source!r}: "
                f"set LIGER_FILE_GLOB to the data files' path pattern (default {DEFAULT_FILE_GLOB!r})"
            )
        tree = _git_ok(["ls-tree", "-r", "-z", self._ref], self.clone_dir).decode("utf-8", errors="replace")
        files: dict[str, str] = {}
        for entry in filter(None, tree.split("\x00")):
            info, _, path = entry.partition("\t")
            mode, kind, blob = info.split(" ", 2)
            if kind == "blob" and mode in _REGULAR_FILE_MODES and self._matches(path):
                files[path] = blob
        at_head = tuple(first_with[path, blob] for path, blob in sorted(files.items()) if (path, blob) in first_with)
        return Listing(head=head, snapshots=tuple(snapshots), files_at_head=tuple(sorted(files)), head_snapshots=at_head)

    def first_parent(self) -> tuple[MainCommit, ...]:
        """The branch's first-parent line, oldest first, with each commit's time and the ids its `Upstream-Commit:`
        trailers name: where a commit of it sits (SPEC section 8: a series follows its place in `main`)."""
        log = _git_ok(
            [
                "log",
                "--first-parent",
                "--reverse",
                f"--format=%x1e%H%x1f%cI%x1f%(trailers:key={UPSTREAM_TRAILER},valueonly,separator=%x1f)",
                self._ref,
            ],
            self.clone_dir,
        ).decode("utf-8", errors="replace")
        commits = []
        for position, record in enumerate((r for r in log.split("\x1e") if r.strip()), 1):
            commit, committed, *named = record.strip("\n").split("\x1f")
            upstream = tuple(n.strip().lower() for n in named if _COMMIT_ID.match(n.strip().lower()))
            commits.append(MainCommit(commit, position, datetime.fromisoformat(committed).astimezone(UTC), upstream))
        return tuple(commits)

    def read(self, ref: SnapshotRef) -> bytes:
        return _git_ok(["cat-file", "blob", f"{ref.commit}:{ref.source_file}"], self.clone_dir)


def place_in_main(refs: tuple[SnapshotRef, ...], main: tuple[MainCommit, ...]) -> tuple[SnapshotRef, ...]:
    """`refs` with each CI folder's benchmarked commit placed in `main` (`main_commit`, `main_position`,
    `main_committed_at`) where `main` holds it: an `Upstream-Commit:` trailer naming it (a filtered copy of upstream,
    whose own ids differ), else its own id. An abbreviation that names more than one commit there, or none, is not
    placed (the view commit_places then places it by when it was first benchmarked)."""
    by_trailer: dict[str, list[MainCommit]] = {}
    by_id: dict[str, list[MainCommit]] = {}
    abbreviations = {len(r.benchmarked_commit) for r in refs if r.benchmarked_commit}
    for commit in main:
        for size in abbreviations:
            by_id.setdefault(commit.commit[:size], []).append(commit)
            for named in commit.upstream_commits:
                by_trailer.setdefault(named[:size], []).append(commit)
    placed = []
    for ref in refs:
        found = (by_trailer.get(ref.benchmarked_commit) or by_id.get(ref.benchmarked_commit) or []) if ref.benchmarked_commit else []
        if len({c.commit for c in found}) == 1:
            ref = replace(ref, main_commit=found[0].commit, main_position=found[0].position, main_committed_at=found[0].committed_at)
        placed.append(ref)
    return tuple(placed)
