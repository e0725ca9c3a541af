"""How a source's network steps are retried, and one process at a time per cache folder."""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pipelines.ingest.source_types import BranchNotFound, DeadlineExceeded, SourceError

NETWORK_ATTEMPTS = 3
BACKOFF_SECONDS = 1.0


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


@contextlib.contextmanager
def cache_lock(clone_dir: Path) -> Iterator[None]:
    """One process at a time per clone: warehouses that share a cache folder may sync at once."""
    clone_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(clone_dir.with_name(f"{clone_dir.name}.lock"), "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield
