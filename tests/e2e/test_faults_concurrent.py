"""Faults: two writers and two readers at once (the ingest step by step in a child process and the
whole `python -m pipelines materialize`, while threads read the Parquet tables and query
warehouse.duckdb). No read fails, the readers see the earlier warehouse or the complete new one, and
the end state equals a clean ingest, with no leftovers."""

from __future__ import annotations

import threading

import duckdb
import polars as pl
import pytest
from fault_harness import History, assert_valid, leftovers, same_tables, start_ingest, start_materialize
from robustness_tally import trial

from pipelines.assemble.tables_build import TABLE_NAMES
from pipelines.statistics import db

# Slow tier (faults injected into whole ingests in processes of their own): `pytest -m 'not slow'` leaves these out.
pytestmark = pytest.mark.slow

pytest_plugins = ["robustness_report"]


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> History:
    return History(tmp_path_factory.mktemp("faults-history"))


def test_two_materializations_and_readers_at_once_corrupt_nothing(history, tmp_path):
    warehouse, cache = history.copy(tmp_path / "run")
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = {"parquet": 0, "duckdb": 0}

    def read_parquet() -> None:
        # Through one open handle: polars and pyarrow given a path open the file twice (footer, then
        # data), and a commit that replaces the file in between fails the read, though both files are whole.
        while not stop.is_set():
            try:
                for name in TABLE_NAMES:
                    with open(warehouse / f"{name}.parquet", "rb") as handle:
                        pl.read_parquet(handle)
                tables = ", ".join(f"(SELECT count(*) FROM read_parquet('{warehouse}/{name}.parquet'))" for name in TABLE_NAMES)
                with duckdb.connect() as con:
                    con.sql(f"SELECT {tables}").fetchall()
                reads["parquet"] += 1
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    def query_duckdb() -> None:
        while not stop.is_set():
            try:
                [(runs,)] = db.query(warehouse, "SELECT count(*) FROM runs").rows
                assert runs in (history.before_runs, history.after["runs"].height)
                assert all(outcome.passed for outcome in db.run_checks(warehouse))
                reads["duckdb"] += 1
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    with trial("fault", "two materializations and two readers at once"):
        readers = [threading.Thread(target=read_parquet), threading.Thread(target=query_duckdb)]
        for reader in readers:
            reader.start()
        # The ingest step by step, and the whole Dagster job (exports and report too), at once.
        ingest = start_ingest(warehouse, str(history.repo.path), cache)
        ingest.stdin.write("go\n")
        ingest.stdin.flush()
        writers = [ingest, start_materialize(warehouse, str(history.repo.path), cache, tmp_path / "home")]
        outcomes = [writer.communicate(timeout=600) for writer in writers]
        stop.set()
        for reader in readers:
            reader.join()
        assert [w.returncode for w in writers] == [0, 0], [err[-2000:] for _, err in outcomes]
        assert not errors, errors[:3]
        assert reads["parquet"] and reads["duckdb"]
        assert same_tables(assert_valid(warehouse), history.after)
        assert not leftovers(warehouse, cache)
