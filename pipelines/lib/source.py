"""Where snapshots come from: a git repository (URL, clone or bundle), a CSV file, or a CSV URL.

The kinds are told apart in source_address and read by source_git and
source_csv; source_types holds what every source lists and raises, and
source_retry how its network steps are retried.
"""

from __future__ import annotations

<<<<<<< HEAD
from pathlib import Path
=======
import contextlib
import fcntl
import fnmatch
import hashlib
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Self

from pipelines.lib import store
from pipelines.lib.settings import DEFAULT_FILE_GLOB

# Overall deadlines of the steps that wait on someone else: past one, the step fails with a SourceError
# naming it, instead of holding the warehouse's writer lock for as long as a stalled server likes.
GIT_DEADLINE_SECONDS = 600  # a clone or fetch (and any git command)
LS_REMOTE_DEADLINE_SECONDS = 120
DOWNLOAD_DEADLINE_SECONDS = 300  # a CSV URL, every attempt included
READ_TIMEOUT_SECONDS = 60  # one socket read of a download
NETWORK_ATTEMPTS = 3
BACKOFF_SECONDS = 1.0
_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/].*")
# `<transport>::<address>` makes git run a remote helper (`ext::` runs any command).
_REMOTE_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
# Git itself refuses every other transport, whatever string reaches it.
GIT_PROTOCOLS = "file:http:https:ssh"
_SAFE_REF = re.compile(r"^[A-Za-z0-9._/-]+$")
BUNDLE_SIGNATURES = (b"# v2 git bundle", b"# v3 git bundle")
_REGULAR_FILE_MODES = ("100644", "100755")


class SourceError(RuntimeError):
    """The source cannot be read; the message is one line a person can act on."""


class BranchNotFound(SourceError):
    """The source answers but has no such branch: the setting to fix is LIGER_BRANCH, and retrying cannot help."""

    def __init__(self, source: str, branch: str):
        super().__init__(
            f"branch {branch!r} was not found in the Liger benchmark source {source!r}; set LIGER_BRANCH to one of its branches"
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


@dataclass(frozen=True)
class Listing:
    """What the source holds now: its snapshots, oldest first, and the files present at its head."""

    head: str | None
    snapshots: tuple[SnapshotRef, ...]
    files_at_head: tuple[str, ...]


def unreachable(source: str, detail: str) -> SourceError:
    # git explains itself over several lines; the first one names the problem.
    detail = next((line.strip() for line in detail.splitlines() if line.strip()), "no answer")
    return SourceError(
        f"cannot read the Liger benchmark source {source!r} ({detail}); "
        "set LIGER_SOURCE to a reachable git URL, local clone, git bundle, CSV file or http(s) CSV URL"
    )


def classify(source: str) -> str:
    """'git', 'csv-file' or 'csv-url'; anything else is refused with a SourceError."""
    if not source or source.startswith("-") or _REMOTE_HELPER.match(source):
        raise SourceError(f"LIGER_SOURCE {source!r} is not a source: give a git URL, a local path or an http(s) URL")
    parsed = urllib.parse.urlparse(source)
    scheme = parsed.scheme.lower()
    if scheme in ("http", "https"):
        return "csv-url" if parsed.path.lower().endswith(".csv") else "git"
    if scheme in ("ssh", "git+ssh", "file"):
        return "git"
    if _SCP_LIKE.match(source):
        return "git"
    if scheme and len(scheme) > 1:
        raise SourceError(
            f"LIGER_SOURCE scheme {scheme!r} is not accepted: use https, ssh or file git URLs, a local path, or an http(s) URL of a CSV"
        )
    path = Path(source).expanduser()
    if path.is_dir():
        return "git"
    if path.is_file():
        with open(path, "rb") as handle:
            return "git" if handle.read(16).startswith(BUNDLE_SIGNATURES) else "csv-file"
    raise unreachable(source, "no such file or directory")


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


@contextlib.contextmanager
def _cache_lock(clone_dir: Path) -> Iterator[None]:
    """One process at a time per clone: warehouses that share a cache folder may sync at once."""
    clone_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(clone_dir.with_name(f"{clone_dir.name}.lock"), "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


def _git_ok(args: list[str], cwd: Path | None = None) -> bytes:
    result = _git(args, cwd)
    if result.returncode != 0:
        raise SourceError(f"git {args[0]} failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout


def with_retries(action: Callable[[], object], attempts: int = NETWORK_ATTEMPTS, backoff: float = BACKOFF_SECONDS):
    """Run `action`, retrying SourceError with exponential backoff; the last error is raised."""
    for attempt in range(attempts):
        try:
            return action()
        except (DeadlineExceeded, BranchNotFound):
            raise
        except SourceError:
            if attempt == attempts - 1:
                raise
            time.sleep(backoff * 2**attempt)
    raise AssertionError("unreachable")


def _git_url(source: str) -> str:
    parsed = urllib.parse.urlparse(source)
    if parsed.scheme or _SCP_LIKE.match(source):
        return source
    return str(Path(source).expanduser().resolve())


class GitSource:
    def __init__(self, source: str, cache_dir: Path, branch: str, file_glob: str):
        if not _SAFE_REF.match(branch) or branch.startswith("-") or ".." in branch:
            raise SourceError(f"branch name {branch!r} is not a plain git branch name")
        self.source = source
        self.url = _git_url(source)
        self.branch = branch
        self.file_glob = file_glob
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
        with _cache_lock(self.clone_dir):
            # Left by a killed clone: its staging, or the old clone it was swapping out (store.swap_folder).
            for stale in [
                *self.clone_dir.parent.glob(f"{self._staging_prefix}*"),
                *self.clone_dir.parent.glob(f".{self.clone_dir.name}{store.TMP_MARK}*"),
            ]:
                shutil.rmtree(stale, ignore_errors=True)
            if self.clone_dir.is_dir() and self._fetch():
                return
            self._fresh_clone()

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
            raise unreachable(self.source, stderr or "git fetch failed")

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
                raise unreachable(self.source, result.stderr.decode(errors="replace").strip() or "git clone failed")

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
        """Every commit on the branch (first parent, oldest first) that added or changed a matching file.

        Only regular files count: a submodule (gitlink) or symlink at a matching path holds no data.
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
                _, new_mode, _, _, status = change.lstrip(":").split(" ")
                if status[0] in "AMT" and new_mode in _REGULAR_FILE_MODES:
                    snapshots.append(
                        SnapshotRef(
                            snapshot_id=f"{commit[:12]}/{self._data_path(path)}",
                            source=self.source,
                            source_file=path,
                            commit=commit,
                            committed_at=datetime.fromisoformat(committed).astimezone(UTC),
                            subject=subject,
                            sequence=sequence + 1,
                        )
                    )
        if not ever_matched:
            raise SourceError(
                f"LIGER_FILE_GLOB {self.file_glob!r} matches no file in the history of branch {self.branch!r} of {self.source!r}: "
                f"set LIGER_FILE_GLOB to the data files' path pattern (default {DEFAULT_FILE_GLOB!r})"
            )
        tree = _git_ok(["ls-tree", "-r", "-z", self._ref], self.clone_dir).decode("utf-8", errors="replace")
        files = []
        for entry in filter(None, tree.split("\x00")):
            info, _, path = entry.partition("\t")
            mode, kind, _ = info.split(" ", 2)
            if kind == "blob" and mode in _REGULAR_FILE_MODES and self._matches(path):
                files.append(path)
        return Listing(head=head, snapshots=tuple(snapshots), files_at_head=tuple(sorted(files)))

    def read(self, ref: SnapshotRef) -> bytes:
        return _git_ok(["cat-file", "blob", f"{ref.commit}:{ref.source_file}"], self.clone_dir)


class CsvSource:
    """A plain CSV file or http(s) URL: one snapshot per distinct content.

    `sync` reads the source once, hashing it as it goes, into a content-addressed copy in the cache
    (a URL is downloaded once per run; a local file is copied only when its content is new), and
    staging reads that copy: what is hashed is what is staged, even when the source changes meanwhile.
    """

    def __init__(self, source: str, is_url: bool, cache_dir: Path):
        self.source = source
        self.is_url = is_url
        name = urllib.parse.urlparse(source).path if is_url else source
        self.file_name = PurePosixPath(name).name or "benchmark.csv"
        key = hashlib.sha256(normalized_source(source).encode()).hexdigest()[:16]
        self.folder = cache_dir / f"csv-{key}"
        self._sha256: str | None = None

    def remote_head(self) -> str | None:
        return self._content_sha256()

    def sync(self) -> None:
        with _cache_lock(self.folder):
            self.folder.mkdir(parents=True, exist_ok=True)
            for stale in self.folder.glob(f"{_PARTIAL_PREFIX}*"):
                stale.unlink(missing_ok=True)  # left by a killed download or copy
            if self.is_url:
                sha = self._download()
            else:
                sha = self._hash_file()
                if not self._copy(sha).is_file():
                    sha = self._store(self._read_local)
            # Only the current content is kept: an older one is never staged again (it is staged or superseded).
            for old in self.folder.glob(f"*{_COPY_SUFFIX}"):
                if old != self._copy(sha):
                    old.unlink(missing_ok=True)
            self._sha256 = sha

    def _content_sha256(self) -> str:
        if self._sha256 is None:
            self.sync()
        assert self._sha256 is not None
        return self._sha256

    def _copy(self, sha: str) -> Path:
        return self.folder / f"{sha}{_COPY_SUFFIX}"

    @property
    def _path(self) -> Path:
        return Path(self.source).expanduser()

    def _hash_file(self) -> str:
        digest = hashlib.sha256()
        try:
            with open(self._path, "rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
        except OSError as exc:
            raise unreachable(self.source, exc.strerror or str(exc)) from None
        return digest.hexdigest()

    def _store(self, write: Callable[[Callable[[bytes], None]], None]) -> str:
        """Let `write` feed the content block by block; it is hashed and kept as the copy named by its hash."""
        digest = hashlib.sha256()
        partial = self.folder / f"{_PARTIAL_PREFIX}{os.getpid()}-{threading.get_ident()}"
        try:
            with open(partial, "wb") as handle:

                def take(block: bytes) -> None:
                    digest.update(block)
                    handle.write(block)

                write(take)
            sha = digest.hexdigest()
            os.replace(partial, self._copy(sha))
            return sha
        finally:
            partial.unlink(missing_ok=True)

    def _read_local(self, take: Callable[[bytes], None]) -> None:
        try:
            with open(self._path, "rb") as handle:
                while block := handle.read(1 << 20):
                    take(block)
        except OSError as exc:
            raise unreachable(self.source, exc.strerror or str(exc)) from None

    def _download(self) -> str:
        step = f"downloading {self.source}"
        deadline = time.monotonic() + DOWNLOAD_DEADLINE_SECONDS

        def attempt() -> str:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded(step, DOWNLOAD_DEADLINE_SECONDS)
            with _Watchdog(remaining) as watchdog:

                def fetch(take: Callable[[bytes], None]) -> None:
                    _fetch_url(self.source, watchdog, take)
                    if watchdog.expired:  # a body without a length just ends when its socket is shut: it is cut
                        raise DeadlineExceeded(step, DOWNLOAD_DEADLINE_SECONDS)

                try:
                    return self._store(fetch)
                except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
                    if watchdog.expired:
                        raise DeadlineExceeded(step, DOWNLOAD_DEADLINE_SECONDS) from None
                    raise unreachable(self.source, str(getattr(exc, "reason", exc)) or type(exc).__name__) from None

        return with_retries(attempt)

    def listing(self) -> Listing:
        sha = self._content_sha256()
        ref = SnapshotRef(
            snapshot_id=f"{sha[:12]}/{self.file_name}",
            source=self.source,
            source_file=self.file_name,
            commit=None,
            committed_at=None,
            subject=None,
            sequence=0,
            content_sha256=sha,
        )
        return Listing(head=sha, snapshots=(ref,), files_at_head=(self.file_name,))

    def read(self, ref: SnapshotRef) -> Path:
        copy = self._copy(ref.content_sha256 or "")
        if not ref.content_sha256 or not copy.is_file():
            raise SourceError(
                f"the copy of {self.source} listed as {ref.snapshot_id} is no longer in {self.folder}: "
                "materialize upstream_source again (it reads the source anew)"
            )
        return copy


_PARTIAL_PREFIX = ".partial-"
_COPY_SUFFIX = ".csv"


class _Watchdog:
    """Shuts a download's sockets when its time is up: a socket timeout bounds one read, not the download."""

    def __init__(self, seconds: float):
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Self:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        # A read blocked on the socket returns at once (shutdown, unlike close, wakes it).
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _fetch_url(url: str, watchdog: _Watchdog, take: Callable[[bytes], None]) -> None:
    def watched(connection_class: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
        class Watched(connection_class):  # type: ignore[misc, valid-type]
            def connect(self) -> None:
                super().connect()
                watchdog.watch(self.sock)

        return Watched

    class Http(urllib.request.HTTPHandler):
        def do_open(self, http_class, req, **kwargs):  # type: ignore[no-untyped-def, override]
            return super().do_open(watched(http_class), req, **kwargs)

    class Https(urllib.request.HTTPSHandler):
        def do_open(self, http_class, req, **kwargs):  # type: ignore[no-untyped-def, override]
            return super().do_open(watched(http_class), req, **kwargs)

    opener = urllib.request.build_opener(Http, Https)
    with opener.open(url, timeout=READ_TIMEOUT_SECONDS) as response:  # the scheme was checked in classify
        while block := response.read(1 << 20):
            take(block)


def normalized_source(source: str) -> str:
    """One spelling per source: a local path (or file URL) absolute and resolved, another URL as given."""
    parsed = urllib.parse.urlparse(source)
    if parsed.scheme.lower() == "file" and parsed.netloc in ("", "localhost"):
        return str(Path(urllib.parse.unquote(parsed.path)).resolve())
    return _git_url(source)
>>>>>>> helper-sql

from pipelines.lib.source_address import classify
from pipelines.lib.source_csv import CsvSource
from pipelines.lib.source_git import GitSource

Source = GitSource | CsvSource


def open_source(source: str, cache_dir: Path, branch: str, file_glob: str) -> Source:
    kind = classify(source)
    if kind == "git":
        return GitSource(source, cache_dir, branch, file_glob)
    return CsvSource(source, is_url=kind == "csv-url", cache_dir=cache_dir)
