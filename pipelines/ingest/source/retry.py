"""How a source's network steps are retried, and one process at a time per cache folder."""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pipelines.ingest.source.listing import BranchNotFound, CacheDiskFull, DeadlineExceeded, SourceError

NETWORK_ATTEMPTS = 3
BACKOFF_SECONDS = 1.0


def with_retries(action: Callable[[], object]):
    """Run `action`, retrying SourceError with exponential backoff; the last error is raised."""
    # The constants are read at each call, not bound as defaults, so that a test's shorter backoff takes effect.
    for attempt in range(NETWORK_ATTEMPTS):
        try:
            return action()
        except (DeadlineExceeded, BranchNotFound, CacheDiskFull):
            raise
        except SourceError:
            if attempt == NETWORK_ATTEMPTS - 1:
                raise
            time.sleep(BACKOFF_SECONDS * 2**attempt)
    raise AssertionError("unreachable")


@contextlib.contextmanager
def cache_lock(clone_dir: Path) -> Iterator[None]:
    """One process at a time per clone: warehouses that share a cache folder may sync at once."""
    clone_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(clone_dir.with_name(f"{clone_dir.name}.lock"), "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield
