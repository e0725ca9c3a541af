"""Stage several snapshots at once, one process per worker.

Parsing and normalizing a snapshot hold the GIL for much of their time (Python's csv module, the
per-value lookups), so a second thread would not use the second core; a second process does. Each
worker opens the source once and keeps its own lookup cache.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pipelines.core import lifetime
from pipelines.core.settings import Settings
from pipelines.ingest import staging
from pipelines.ingest.normalize.distinct_cache import DistinctCache
from pipelines.ingest.source.configured import source_of
from pipelines.ingest.source.listing import SnapshotRef

# Below this many snapshots, starting the worker processes (each imports polars) costs more than it saves.
PARALLEL_FROM = 4

_worker: dict = {}


def stage_all(warehouse: Path, settings: Settings, jobs: list[tuple[SnapshotRef, int]], workers: int) -> Iterator[staging.SnapshotMeta]:
    """Stage each (snapshot, ingest_seq) of `jobs`, yielding their metadata in the order of `jobs`."""
    if workers <= 1 or len(jobs) < PARALLEL_FROM:
        source, cache = source_of(settings), DistinctCache()
        for ref, seq in jobs:
            yield staging.stage_snapshot(warehouse, ref, source.read, cache, seq)
        return
    # spawn, not fork: a forked copy of a process running polars' or Dagster's threads can deadlock.
    pool = ProcessPoolExecutor(
        min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"), initializer=_open, initargs=(settings, os.getpid())
    )
    try:
        # The workers start in these submits and inherit the signal mask of the thread that starts them: with SIGINT
        # blocked, a Ctrl-C while a worker still imports (before its initializer ignores SIGINT) waits, then is ignored.
        with _sigint_blocked():
            futures = [pool.submit(_stage, warehouse, ref, seq) for ref, seq in jobs]
        for future in futures:
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _open(settings: Settings, parent: int) -> None:
    lifetime.die_with_parent(parent)
    # Ctrl-C reaches the whole process group: the run (the parent) stops the pool and says it was interrupted;
    # a worker that took the interrupt itself would die with a traceback and break the pool instead.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _worker["source"] = source_of(settings)
    _worker["cache"] = DistinctCache()


def _stage(warehouse: Path, ref: SnapshotRef, seq: int) -> staging.SnapshotMeta:
    return staging.stage_snapshot(warehouse, ref, _worker["source"].read, _worker["cache"], seq)
