"""The build's checks judge the tables batch by batch (assemble.table_scan): what they find must be what reading the
tables whole finds, in order or not, at a batch boundary or inside a batch."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.assemble import table_scan


def _write(path: Path, ids: list[str | None]) -> Path:
    pl.DataFrame({"run_id": ids}, schema={"run_id": pl.String}).write_parquet(path, row_group_size=3)
    return path


@pytest.fixture(autouse=True, params=["row groups", "batches"])
def small_batches(monkeypatch, request):
    # Row groups of 3 rows (_write), read whole, or, as larger than ROW_GROUP_ROWS, in batches of 2 that cut across
    # them: repeats and gaps fall inside batches and across their boundaries, by either reader.
    whole = request.param == "row groups"
    monkeypatch.setattr(table_scan, "BATCH_ROWS", 3 if whole else 2)
    monkeypatch.setattr(table_scan, "ROW_GROUP_ROWS", 3 if whole else 2)


def test_a_file_is_read_by_row_groups_or_in_batches(tmp_path, small_batches):
    path = _write(tmp_path / "ids.parquet", [str(i) for i in range(7)])
    heights = [frame.height for frame in table_scan.batches(path, ["run_id"])]
    assert heights == ([3, 3, 1] if table_scan.ROW_GROUP_ROWS == 3 else [2, 2, 2, 1])


@pytest.mark.parametrize(
    "ids",
    [
        ["a", "b", "c", "d", "e", "f", "g"],
        ["a", "b", "c", "c", "d", "e", "e", "e", "e", "f"],  # a repeat across a boundary, one spanning three batches
        ["a", "a", "a", "b", "b", "b", "c"],  # repeats that end exactly at a boundary
        ["a", None, "b", "b", None, "c"],
        [],
    ],
)
def test_repeated_ids_in_order(tmp_path, ids):
    path = _write(tmp_path / "runs.parquet", ids)
    frame = pl.read_parquet(path).drop_nulls()
    expected = sorted(frame.filter(pl.col("run_id").is_duplicated())["run_id"].unique().to_list())
    assert table_scan.repeated_ids(path, "run_id") == (len(expected), expected[:5])


def test_ids_out_of_order_are_not_counted_by_the_walk(tmp_path):
    # Out of order inside a batch, and only across a boundary.
    assert table_scan.repeated_ids(_write(tmp_path / "a.parquet", ["b", "a", "c"]), "run_id") is None
    assert table_scan.repeated_ids(_write(tmp_path / "b.parquet", ["a", "b", "d", "c", "e", "f"]), "run_id") is None


@pytest.mark.parametrize(
    ("measured", "runs"),
    [
        (["a", "a", "a", "b", "b", "d", "d", "d"], ["a", "b", "c", "d"]),
        (["a", "a", "x", "x", "x", "x", "x", "z"], ["a", "b", "c", "d", "e", "f", "g"]),  # x spans batches, z past the end
        (["0", "a", "m", "m", "n"], ["b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]),  # before the first, between two
        (["a", "b"], []),
        ([], ["a"]),
    ],
)
def test_missing_ids_in_order(tmp_path, measured, runs):
    expected = len(set(measured) - set(runs))
    found = table_scan.missing_ids(_write(tmp_path / "m.parquet", measured), "run_id", _write(tmp_path / "r.parquet", runs), "run_id")
    assert found == expected


def test_missing_ids_out_of_order(tmp_path):
    runs = _write(tmp_path / "r.parquet", ["a", "b", "c", "d", "e", "f", "g"])
    assert table_scan.missing_ids(_write(tmp_path / "m.parquet", ["b", "a"]), "run_id", runs, "run_id") is None
    unordered_tail = _write(tmp_path / "r2.parquet", ["a", "b", "c", "d", "f", "e"])
    assert table_scan.missing_ids(_write(tmp_path / "m2.parquet", ["a"]), "run_id", unordered_tail, "run_id") is None


def test_checks_judge_tables_out_of_order_exactly(tmp_path):
    """A runs table out of run_id order (by hand, or a broken writer) is judged by DuckDB, with the same counts."""
    from pipelines.assemble import checks

    _write(tmp_path / "runs.parquet", ["c", "a", "b", "a", "c", "c"])
    pl.DataFrame({"run_id": ["z", "a", "y", "y"]}).write_parquet(tmp_path / "measurements.parquet")
    outcome = checks.run_ids_unique(tmp_path)
    assert not outcome.passed and outcome.description.startswith("2 run_id values") and outcome.details["examples"] == ["a", "c"]
    assert checks._orphan_measurements(tmp_path) == 2
