"""Faults: a disk that fills mid-write, in any Parquet write of a run (a staged snapshot, or a table
batch by batch) or in the journal, a table state, the source listing or the database build. The
previous warehouse stays readable and passes its checks, and the next normal run repairs everything:
its tables equal those of a clean ingest."""

from __future__ import annotations

import errno
import importlib
import os
from pathlib import Path

import pytest
from fault_harness import History, assert_valid, ingest_now, same_tables
from robustness_tally import trial

from pipelines.core import layout
from pipelines.storage import store

# Slow tier (faults injected into whole ingests): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow

pytest_plugins = ["robustness_report"]

DISK_FULL_POINTS = 8


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> History:
    return History(tmp_path_factory.mktemp("faults-history"))


def enospc(path: object) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


class FullDisk:
    """Counts Parquet writes (whole files, and batches appended to a file) and fails the
    `failing`-th with ENOSPC, after putting half a file where a whole file was to go."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, failing: int | None = None):
        self.calls, self.failing = 0, failing
        write_parquet = store.write_parquet

        def whole(frame, path, *args, **kwargs):
            self._count(Path(path))
            return write_parquet(frame, path, *args, **kwargs)

        monkeypatch.setattr(store, "write_parquet", whole)
        appender = getattr(store, "ParquetAppender", None)
        if appender is not None:
            append = appender.write

            def batch(writer, frame, *args, **kwargs):
                self._count(None)
                return append(writer, frame, *args, **kwargs)

            monkeypatch.setattr(appender, "write", batch)

    def _count(self, path: Path | None) -> None:
        self.calls += 1
        if self.calls == self.failing:
            if path is not None:
                path.write_bytes(b"PAR1 half a file")
            raise enospc(path)


def test_disk_full_in_the_middle_of_any_parquet_write(history, tmp_path):
    """A Parquet write of a run (a staged snapshot, or a table, batch by batch) fails with ENOSPC:
    the earlier warehouse stays as it was and the next run completes it."""
    with pytest.MonkeyPatch.context() as patch:
        counter = FullDisk(patch)
        ingest_now(*history.copy(tmp_path / "count"), source=str(history.repo.path))
    # Evenly spread over the run, first and last write included: staging, then every table.
    points = sorted({round(1 + k * (counter.calls - 1) / (DISK_FULL_POINTS - 1)) for k in range(DISK_FULL_POINTS)})
    for failing in points:
        warehouse, cache = history.copy(tmp_path / "run")
        with trial("fault", "disk full writing Parquet"):
            with pytest.MonkeyPatch.context() as patch, pytest.raises(OSError) as raised:
                FullDisk(patch, failing)
                ingest_now(warehouse, cache, source=str(history.repo.path))
            assert raised.value.errno == errno.ENOSPC
            assert same_tables(assert_valid(warehouse), history.before)
            history.assert_repaired(warehouse, cache)


@pytest.mark.parametrize(
    ("target", "where"),
    [
        ("pipelines.storage.store.write_bytes_atomic", layout.MANIFEST),
        ("pipelines.storage.store.write_bytes_atomic", "_source.json"),
        ("pipelines.statistics.database_build._create_statistics", None),
    ],
    ids=["build manifest", "source listing", "database build"],
)
def test_disk_full_writing_a_manifest_the_listing_or_the_database(history, tmp_path, monkeypatch, target, where):
    module, name = target.rsplit(".", 1)
    original = getattr(importlib.import_module(module), name)

    def failing(*args, **kwargs):
        path = args[0]
        if where is None or Path(path).name == where:
            if where is not None:
                store.temp_path(Path(path)).write_bytes(b"{half")
            raise enospc(path)
        return original(*args, **kwargs)

    warehouse, cache = history.copy(tmp_path / "run")
    with trial("fault", f"disk full writing {where or 'warehouse.duckdb'}"):
        monkeypatch.setattr(target, failing)
        with pytest.raises(OSError) as raised:
            ingest_now(warehouse, cache, str(history.repo.path))
        monkeypatch.setattr(target, original)
        assert raised.value.errno == errno.ENOSPC
        history.assert_previous_or_complete(warehouse)
        history.assert_repaired(warehouse, cache)
