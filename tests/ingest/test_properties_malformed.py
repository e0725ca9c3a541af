"""Property-based tests of the parser and normalizer (SPEC section 5: nothing is lost): files that
are not well-formed. A row with broken quoting is quarantined, never repaired; any bytes at all
(arbitrary, or a generated file cut short) end as a snapshot or one clear rejection; an empty or
header-only file is rejected or ingested with no rows; a file refused whole keeps each line as a quarantined row.
Never a crash.

Examples per property: the profiles registered in `generated_csv`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import HEADER
from generated_csv import COLUMNS, PROFILE, csv_files, good_rows, quote
from hypothesis import given, settings
from hypothesis import strategies as st
from robustness_tally import trial
from snapshot_oracle import RAW_FIELD, assemble_and_check, conserved, readers_agree, scratch, stage, staged

pytest_plugins = ["robustness_report"]


@st.composite
def broken_quoting(draw) -> tuple[bytes, list[dict[str, str]], int]:
    """Good rows, one written with a quote left open or text after its closing quote."""
    goods = draw(st.lists(good_rows(), min_size=1, max_size=6))
    for index, row in enumerate(goods):
        row["timestamp"] = f"2025-01-01 10:00:{index:02d}"  # distinct rows
    broken = draw(st.integers(0, len(goods) - 1))
    column = draw(st.sampled_from(range(len(COLUMNS))))
    how = draw(st.sampled_from(["open", "junk_after", "junk_after_empty"]))
    lines = []
    for index, row in enumerate(goods):
        fields = [quote(row[c], draw(st.booleans())) for c in COLUMNS]
        if index == broken:
            plain = row[COLUMNS[column]].replace('"', "")
            fields[column] = {"open": f'"{plain}', "junk_after": f'"{plain}"x', "junk_after_empty": '""x'}[how]
        lines.append(",".join(fields))
    return ("\n".join([HEADER, *lines]) + draw(st.sampled_from(["", "\n"]))).encode(), goods, broken


@pytest.mark.slow
@settings(PROFILE)
@given(broken_quoting())
def test_broken_quoting_is_quarantined_never_repaired(case):
    data, goods, broken = case
    with trial("generated input", "file with broken quoting"), scratch() as folder:
        warehouse = Path(folder)
        meta = stage(warehouse, data)
        accepted, quarantine = staged(warehouse, meta, "rows"), staged(warehouse, meta, "quarantine")
        assert meta.status == "ingested" and meta.quarantined >= 1
        inputs = [tuple(row[c] for c in COLUMNS) for row in goods]
        for got in accepted.iter_rows(named=True):
            fields = tuple(got[RAW_FIELD[c]] for c in COLUMNS)
            assert fields in inputs, f"accepted row {got['row_number']} is no input row: {fields}"
            assert inputs.index(fields) != broken, "the broken row was repaired and accepted"
        # Rows before the broken one are untouched by it.
        assert set(range(1, broken + 1)) <= set(accepted["row_number"])
        conserved(data, accepted, quarantine, list(COLUMNS))
        assemble_and_check(warehouse)
        readers_agree(data)


@pytest.mark.slow
@settings(PROFILE)
@given(
    st.one_of(
        st.binary(max_size=400), st.text(max_size=400).map(str.encode), csv_files(max_rows=2).map(lambda c: c.data[: len(c.data) // 2])
    )
)
def test_any_bytes_end_as_a_snapshot_or_one_clear_rejection(data: bytes):
    with trial("generated input", "arbitrary bytes or a truncated file"), scratch() as folder:
        warehouse = Path(folder)
        meta = stage(warehouse, data)
        assert meta.row_count == meta.accepted + meta.quarantined
        if meta.status == "rejected":
            assert meta.accepted == 0 and meta.reason and "\n" not in meta.reason
        else:
            assert meta.status == "ingested" and meta.reason is None
        # A file cut short may end in a cut number: a value, but not an ordered one.
        assemble_and_check(warehouse, quantiles_ordered=False)
        readers_agree(data)


def test_empty_and_header_only_files(tmp_path):
    for name, data, status, rows in [
        ("empty file", b"", "rejected", 0),
        ("only a BOM and blank lines", b"\xef\xbb\xbf\n\n", "rejected", 0),
        ("header only", HEADER.encode(), "ingested", 0),
        ("header only with CRLF", (HEADER + "\r\n").encode(), "ingested", 0),
        ("header not UTF-8", b"\xff" + HEADER.encode() + b"\n", "rejected", 0),
        # Found by the property above: the first line is empty, so the header names no column.
        ("empty first line", b"\r\x00", "rejected", 1),
        # Refused whole, each line after the first is a quarantined row: the header line here.
        ("empty first line, then a header", ("\n" + HEADER + "\n").encode(), "rejected", 1),
    ]:
        with trial("generated input", "empty or header-only file"):
            meta = stage(tmp_path / name, data)
            assert (meta.status, meta.row_count, meta.accepted, meta.quarantined) == (status, rows, 0, rows), name
            assert (meta.reason is None) == (status == "ingested"), name
            if status == "rejected":
                assert meta.reason.startswith("not a Liger benchmark CSV"), meta.reason
