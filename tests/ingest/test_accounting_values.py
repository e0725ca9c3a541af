"""SPEC section 5: a latency or peak memory that is a number but not above zero (0, -0, negative, or one that rounds
to 0 in the canonical unit: `1e-320` ms is 0 ns) is no measurement: the row is quarantined naming the column and the
value, on the fast reader's path and on the careful one's alike, and never becomes a run (which ranked first)."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import HEADER, build_warehouse, liger_row

from pipelines.ingest.parse import header as parse_header
from pipelines.ingest.parse import records as parse
from pipelines.ingest.parse.fast import FastPathRefused

DATA = "benchmark/data/all_benchmark_data.csv"
# (the row, the words its reason must hold); every row its own run (its own x value).
NOT_MEASUREMENTS = [
    (liger_row(x_value="1", y50="-5", y20="-6", y80="-4"), ["y_value_50 -5 is not above zero", "y_value_20 -6", "y_value_80 -4"]),
    (liger_row(x_value="2", y50="0", y20="0", y80="0.6"), ["y_value_50 0 is not above zero", "y_value_20 0 is not above zero"]),
    (liger_row(x_value="3", y50="1e-320", y20="1e-320", y80="1e-320"), ["y_value_50 1e-320 rounds to 0 ns"]),
    (liger_row(x_value="4", y50="-0", y20="0.4", y80="0.6"), ["y_value_50 -0 is not above zero"]),
    (liger_row(x_value="5", y50="0.5", y20="4e-7", y80="0.6"), ["y_value_20 4e-7 rounds to 0 ns"]),
    (liger_row(x_value="6", metric="memory", unit="MB", y50="0", y20="0", y80="0"), ["y_value_50 0 is not above zero"]),
    (liger_row(x_value="7", metric="memory", unit="MB", y50="1e-320", y20="1", y80="2"), ["y_value_50 1e-320 rounds to 0 bytes"]),
]
GOOD = [
    liger_row(x_value="8"),
    liger_row(x_value="9", provider="torch", y50="0.9", y20="0.8", y80="1"),
    # A missing value is a failed run, not a non-positive one; another metric keeps any number.
    liger_row(x_value="10", y50="nan", y20="", y80=""),
    liger_row(x_value="11", metric="loss_delta", unit="nats", y50="-0.5", y20="-0.6", y80="0"),
]
BROKEN = 'rms_norm,liger,forward,speed,ms,H,"hidden"size,12,0.5,0.4,0.6,{},GPU,2025-01-01 10:00:00,0.5.0'


@pytest.mark.parametrize("path", ["fast", "careful"])
def test_values_not_above_zero_are_quarantined_with_column_and_value(upstream_repo, tmp_path, path):
    rows = [row for row, _ in NOT_MEASUREMENTS] + GOOD + ([BROKEN] if path == "careful" else [])
    data = "\r\n".join([HEADER, *rows]) + "\r\n"
    header = parse_header.read_header(data.encode())
    if path == "fast":
        assert sum(frame.height for frame in parse.iter_records(data.encode(), header)) == len(rows)
    else:
        with pytest.raises(FastPathRefused):
            list(parse.iter_records(data.encode(), header))
    upstream_repo.commit({DATA: data}, "values not above zero")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")

    quarantine = pl.read_parquet(warehouse / "quarantine.parquet").sort("row_number")
    reasons = dict(quarantine.select("row_number", "reason").iter_rows())
    for number, (_, words) in enumerate(NOT_MEASUREMENTS, 1):
        assert all(word in reasons[number] for word in words), (words, reasons[number])
        assert "not a measurement" in reasons[number]
    assert set(reasons) == set(range(1, len(NOT_MEASUREMENTS) + 1)) | ({len(rows)} if path == "careful" else set())
    runs = pl.read_parquet(warehouse / "runs.parquet")
    assert sorted(runs["x_value"], key=int) == ["8", "9", "10", "11"]
    measured = runs.filter(pl.col("metric").is_in(["speed", "memory"]) & (pl.col("status") == "passed"))
    assert measured.select((pl.col("value") > 0) & (pl.col("p20") > 0) & (pl.col("p80") > 0)).to_series().all()
    assert runs.filter(pl.col("metric") == "loss_delta")["value"].to_list() == [-0.5]
    [snapshot] = pl.read_parquet(warehouse / "snapshots.parquet").iter_rows(named=True)
    assert (snapshot["row_count"], snapshot["accepted"], snapshot["quarantined"]) == (len(rows), len(GOOD), len(rows) - len(GOOD))
