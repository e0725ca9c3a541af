"""A CSV source: a plain file or an http(s) URL, one snapshot per distinct content."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Self

from pipelines.ingest.source.address import normalized_source
from pipelines.ingest.source.listing import DeadlineExceeded, Listing, SnapshotRef, SourceError, unreachable
from pipelines.ingest.source.retry import cache_lock, with_retries

# The overall deadline of a download: past it, the step fails with a SourceError naming it, instead of holding
# the warehouse's writer lock for as long as a stalled server likes.
DOWNLOAD_DEADLINE_SECONDS = 300  # a CSV URL, every attempt included
READ_TIMEOUT_SECONDS = 60  # one socket read of a download


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
        with cache_lock(self.folder):
            self.folder.mkdir(parents=True, exist_ok=True)
            for stale in self.folder.glob(f"{_PARTIAL_PREFIX}*"):
                stale.unlink(missing_ok=True)  # left by a killed download or copy
            if self.is_url:
                sha = self._download()
            elif not any(self.folder.glob(f"*{_COPY_SUFFIX}")):
                # No copy kept yet (a first sync): none can be this content's, so the file is hashed once, as it is copied.
                sha = self._store(self._read_local)
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
            raise unreachable(self.source, exc.strerror or str(exc), cache=self.folder) from None

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
                    raise unreachable(self.source, str(getattr(exc, "reason", exc)) or type(exc).__name__, cache=self.folder) from None

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
            stream="file",
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
