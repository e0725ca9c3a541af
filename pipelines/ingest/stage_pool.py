"""Stage several snapshots at once, one process per worker, when that is worth it.

Parsing and normalizing a snapshot hold the GIL for much of their time (Python's csv module, the
per-value lookups), so a second thread would not use the second core; a second process does. Each
worker opens the source once and keeps its own lookup cache. Starting them costs seconds (each imports
polars and learns its lookups again), more than upstream's 83 small snapshots take in this process
(docs/performance.md), so a run stages here first and starts the workers only for a history that would take longer.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from pipelines.core import lifetime
from pipelines.core.settings import Settings
from pipelines.ingest import staging
from pipelines.ingest.normalize.distinct_cache import DistinctCache
from pipelines.ingest.source.configured import source_of
from pipelines.ingest.source.listing import SnapshotRef

# Below this many snapshots, starting the worker processes (each imports polars) costs more than it saves.
PARALLEL_FROM = 4
# The pace is judged on this many snapshots after the first, whose time is mostly warming up (imports, the source's
# first read, an empty lookup cache): judged on the first alone, upstream's history looked ten times slower than it is.
SAMPLE = 4

_worker: dict = {}


def stage_all(warehouse: Path, settings: Settings, jobs: list[tuple[SnapshotRef, int]], workers: int) -> Iterator[staging.SnapshotMeta]:
    """Stage each (snapshot, ingest_seq) of `jobs`, yielding their metadata in the order of `jobs`: in this process
    while the rest would take at most `settings.staging_parallel_after_s` at the pace so far, on `workers` processes from then on."""
    source, cache = source_of(settings), DistinctCache()
    warm = None
    # Each snapshot's file is read (a git process for a git source: 83 of them for upstream's history) while the one
    # before it is staged, one file ahead. When the workers take over, the file read last is read again by its worker.
    with ThreadPoolExecutor(1, thread_name_prefix="read-ahead") as reader:
        reading = reader.submit(source.read, jobs[0][0]) if jobs else None
        for done, (ref, seq) in enumerate(jobs):
            rest = len(jobs) - done
            if warm is not None and done == 1 + SAMPLE and workers > 1 and rest >= PARALLEL_FROM:
                pace = (time.perf_counter() - warm) / SAMPLE
                if pace * rest > settings.staging_parallel_after_s:
                    reading = data = None  # the workers read their own files: none is held here meanwhile
                    yield from _on_workers(warehouse, settings, jobs[done:], workers)
                    return
            data = reading.result()
            reading = reader.submit(source.read, jobs[done + 1][0]) if rest > 1 else None
            yield staging.stage_snapshot(warehouse, ref, lambda _, data=data: data, cache, seq)
            if done == 0:
                warm = time.perf_counter()


def _on_workers(warehouse: Path, settings: Settings, jobs: list[tuple[SnapshotRef, int]], workers: int) -> Iterator[staging.SnapshotMeta]:
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
