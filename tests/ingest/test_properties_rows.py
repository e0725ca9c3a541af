"""Property-based tests of the parser and normalizer (SPEC section 5: nothing is lost): generated files.

Hypothesis writes Liger CSV files the way a careless hand would (`generated_csv`): rows with a bad
y value, a config that is not a JSON object, a timestamp in another format, a field too many, an
invalid UTF-8 byte; files with a BOM, CRLF or CR endings, columns reordered, renamed, missing or
added. Each file is staged as a snapshot and assembled, and an oracle written from the SPEC (not
from the code) says which rows must be accepted and which quarantined and why. Every generated
input must end as accepted runs whose raw fields equal the input plus quarantine rows with reasons,
or as one rejected snapshot for a file that is not a Liger CSV; never a crash, never a dropped or
repaired row.

Examples per property: 300 when CI is set, else 100 (profiles `robustness-ci`, `robustness-dev`,
registered in `generated_csv`; HYPOTHESIS_PROFILE picks another registered profile).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl
import pytest
from generated_csv import COLUMNS, PROFILE, CsvFile, csv_files, original_column
from hypothesis import given, settings
from robustness_tally import trial
from snapshot_oracle import RAW_FIELD, assemble_and_check, assert_reasons, conserved, readers_agree, scratch, stage, staged

pytest_plugins = ["robustness_report"]


def check_file(case: CsvFile) -> None:
    with scratch() as folder:
        warehouse = Path(folder)
        meta = stage(warehouse, case.data)
        accepted, quarantine = staged(warehouse, meta, "rows"), staged(warehouse, meta, "quarantine")
        expected_rows = len(case.rows)
        assert (meta.row_count, meta.accepted + meta.quarantined) == (expected_rows, expected_rows)
        assert (accepted.height, quarantine.height) == (meta.accepted, meta.quarantined)
        assert_reasons(quarantine)
        if case.rejected_for:
            assert meta.status == "rejected" and case.rejected_for in meta.reason
            assert meta.accepted == 0 and set(quarantine["reason"]) <= {meta.reason}
        else:
            assert meta.status == "ingested", meta.reason
            _rows_as_the_oracle_says(case, accepted, quarantine)
        conserved(case.data, accepted, quarantine, case.columns)
        frames = assemble_and_check(warehouse)
        assert frames["run_snapshots"].height == meta.accepted and frames["quarantine"].height == meta.quarantined


def _rows_as_the_oracle_says(case: CsvFile, accepted: pl.DataFrame, quarantine: pl.DataFrame) -> None:
    by_number = {row_number: row for row_number, row in enumerate(case.rows, 1)}
    accepted_numbers = set(accepted["row_number"])
    assert accepted_numbers == {n for n, r in by_number.items() if r.expect == "accept"}
    for q in quarantine.iter_rows(named=True):
        row = by_number[q["row_number"]]
        assert row.expect == "quarantine", f"row {q['row_number']} quarantined: {q['reason']}"
        assert all(word in q["reason"] for word in row.reason_words), (row.reason_words, q["reason"])
        if row.field_delta == 0 and row.bad_bytes is None:
            written = next(csv.reader(io.StringIO(q["raw"], newline="")))
            present = [c for c in case.columns if c not in row.extras]
            assert written == [row.values.get(c, row.values.get(original_column(c))) for c in present] + list(row.extras.values())
    for got in accepted.iter_rows(named=True):
        row = by_number[got["row_number"]]
        for column in COLUMNS:
            want = row.values[column] if column in case.columns else None
            assert got[RAW_FIELD[column]] == want, f"row {got['row_number']} {column}: {got[RAW_FIELD[column]]!r} != {want!r}"
        assert json.loads(got["extra_columns"] or "{}") == row.extras
        if got["metric"] == "speed" and got["raw_unit"] == "ms" and got["raw_p50"] is not None:
            assert abs(got["value"] - float(row.values["y_value_50"]) * 1e6) <= 0.5
        assert (got["status"] == "failed") == (row.values["y_value_50"].strip().lower() in ("", "nan", "-nan"))


@pytest.mark.slow
@settings(PROFILE)
@given(csv_files())
def test_every_row_of_a_generated_file_is_accepted_verbatim_or_quarantined_with_its_reason(case: CsvFile):
    with trial("generated input", "file of corrupted rows and drifted columns"):
        check_file(case)
        readers_agree(case.data)
