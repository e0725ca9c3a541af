"""Property-based tests of the parser and normalizer (SPEC section 5: nothing is lost).

Hypothesis writes Liger CSV files the way a careless hand would: rows with a bad y value,
a config that is not a JSON object, a timestamp in another format, a field too many, an
invalid UTF-8 byte, broken quoting; files with a BOM, CRLF or CR endings, columns
reordered, renamed, missing or added. Each file is staged as a snapshot and assembled, and
an oracle written from the SPEC (not from the code) says which rows must be accepted and
which quarantined and why. Every generated input must end as accepted runs whose raw fields
equal the input plus quarantine rows with reasons, or as one rejected snapshot for a file
that is not a Liger CSV; never a crash, never a dropped or repaired row.

Examples per property: 300 when CI is set, else 100 (profiles `robustness-ci`,
`robustness-dev`; HYPOTHESIS_PROFILE picks another registered profile).
"""

from __future__ import annotations

import csv
import io
import json
import os
import reprlib
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from conftest import HEADER
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from robustness_tally import trial

from pipelines.assemble import checks, tables
from pipelines.core.schemas import (
    AS_WRITTEN,
    QUARANTINE,
    REQUIRED_COLUMNS,
    REQUIRED_VALUES,
    RUN_ROWS,
)
from pipelines.core.settings import PROJECT_ROOT
from pipelines.ingest import staging
from pipelines.ingest.normalize_cache import DistinctCache
from pipelines.ingest.parse import iter_records
from pipelines.ingest.parse_fast import FastPathRefused
from pipelines.ingest.parse_header import read_header
from pipelines.ingest.source_types import SnapshotRef
from pipelines.storage import store

pytest_plugins = ["robustness_report"]

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
settings.register_profile("robustness-ci", max_examples=300, database=None, print_blob=True, **_COMMON)
settings.register_profile(
    "robustness-dev", max_examples=100, database=DirectoryBasedExampleDatabase(PROJECT_ROOT / "data" / ".hypothesis"), **_COMMON
)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("robustness-ci" if os.environ.get("CI") else "robustness-dev"))

COLUMNS = tuple(HEADER.split(","))
OPTIONAL_COLUMNS = tuple(c for c in COLUMNS if c not in REQUIRED_COLUMNS)
EXTRA_COLUMNS = ("cuda_version", "torch_version", "notes")
RENAMES = {"gpu_name": "device", "kernel_name": "kernel", "timestamp": "time", "y_value_50": "y_value_median"}
# Fields of an accepted row as the normalizer keeps them verbatim, by CSV column.
RAW_FIELD = AS_WRITTEN
Y_COLUMNS = ("y_value_50", "y_value_20", "y_value_80")
NOT_CONTENT = str.maketrans("", "", ',"\r\n')

# ---------------------------------------------------------------- generated rows


@dataclass
class Row:
    """One generated row: its fields by column, what it must become, and how it is written."""

    values: dict[str, str]
    expect: str = "accept"  # or "quarantine"
    reason_words: tuple[str, ...] = ()  # words the quarantine reason must contain
    field_delta: int = 0  # fields removed (<0) or added (>0) when written
    bad_bytes: tuple[int, bytes] | None = None  # (which field, invalid UTF-8 bytes put in its text)
    blank_before: bool = False
    extras: dict[str, str] = field(default_factory=dict)


text_chars = st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs"))
free_text = st.text(text_chars, min_size=1, max_size=12).filter(lambda s: s.strip() != "")
# Commas, quotes and line breaks inside a field are legal CSV when quoted.
awkward_text = st.text(st.one_of(text_chars, st.sampled_from(',"\n')), max_size=12)
numbers = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
number_formats = st.sampled_from([repr, "{:.3f}".format, "{:e}".format, " {} ".format, lambda v: str(int(v))])
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False), free_text
)
config_keys = st.one_of(
    st.sampled_from(["B", "T", "H", "V", "BT", "M", "N", "dtype", "mode", "bsz", "seq_len", "hidden_size", "batch"]), free_text
)
configs = st.one_of(
    st.sampled_from(["", "null", "{}"]),
    st.builds(
        lambda d, compact: json.dumps(d, separators=(",", ":") if compact else None),
        st.dictionaries(
            config_keys,
            st.one_of(json_scalars, st.lists(st.integers(0, 9), max_size=3), st.sampled_from(["torch.bfloat16", "torch.float32"])),
            max_size=5,
        ),
        st.booleans(),
    ),
)
timestamps = st.datetimes(datetime(1990, 1, 1), datetime(2099, 12, 31)).map(lambda t: t.strftime("%Y-%m-%d %H:%M:%S"))


@st.composite
def y_values(draw) -> tuple[str, str, str]:
    p20, p50, p80 = sorted(draw(st.lists(numbers, min_size=3, max_size=3)))
    fmt = draw(number_formats)
    return fmt(p50), fmt(p20), fmt(p80)


@st.composite
def good_rows(draw) -> dict[str, str]:
    metric, unit = draw(st.one_of(st.sampled_from([("speed", "ms"), ("memory", "MB")]), st.tuples(free_text, free_text)))
    y50, y20, y80 = draw(y_values())
    return {
        "kernel_name": draw(st.one_of(st.sampled_from(["rms_norm", "geglu", "fused_linear_cross_entropy"]), free_text)),
        "kernel_provider": draw(st.one_of(st.sampled_from(["liger", "huggingface", "torch"]), free_text)),
        "kernel_operation_mode": draw(st.sampled_from(["forward", "backward", "full", "no-grad-forward"])),
        "metric_name": metric,
        "metric_unit": unit,
        "x_name": draw(st.one_of(st.sampled_from(["H", "T", "BT", "V", "seq_len", "model"]), free_text)),
        "x_label": draw(awkward_text),
        "x_value": draw(st.one_of(st.integers(0, 10**6).map(str), numbers.map(repr), free_text)),
        "y_value_50": y50,
        "y_value_20": y20,
        "y_value_80": y80,
        "extra_benchmark_config_str": draw(configs),
        "gpu_name": draw(st.one_of(st.sampled_from(["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"]), free_text)),
        "timestamp": draw(timestamps),
        "liger_version": draw(st.one_of(st.just(""), st.sampled_from(["0.5.0", "0.6.1"]), free_text)),
    }


BAD_Y = st.sampled_from(["abc", "1.2.3", "0x10", "1,5", "inf", "-inf", "Infinity", "1e999", "--1", "½"])
MISSING_Y = st.sampled_from(["", "nan", "NaN", " nan ", "-nan", "  "])
NOT_JSON = st.sampled_from(["{'M': 1}", "{M: 1}", '{"M": 1', "abc", '{"a": NaN}', '{"a": Infinity}', '{"a": 1}}', "[1,"])
NOT_OBJECT = st.sampled_from(["[1, 2]", "3", '"text"', "true", "[]", "1.5"])
OTHER_TIMES = st.sampled_from(
    [
        "2025-01-01T10:00:00",
        "2025-01-01 10:00:00Z",
        "2025-01-01 10:00",
        "01/02/2025 10:00:00",
        "2025-01-01",
        "1735725600",
        "2025-02-30 10:00:00",
        "2025-13-01 10:00:00",
        "2025-1-1 10:00:00",
        "2025-01-01 10:00:00.123",
    ]
)
INVALID_UTF8 = st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\x80abc", b"\xf0\x28\x8c\x28"])


@st.composite
def rows(draw) -> Row:
    """A good row, or a good row with one corruption and what it must become."""
    row = Row(draw(good_rows()), blank_before=draw(st.integers(0, 9)) == 0)
    kind = draw(
        st.sampled_from(
            ["good"] * 6
            + [
                "bad_y",
                "missing_y",
                "not_json",
                "not_object",
                "deep",
                "huge",
                "empty_required",
                "other_time",
                "field_count",
                "invalid_utf8",
            ]
        )
    )
    v = row.values
    if kind == "bad_y":
        column = draw(st.sampled_from(Y_COLUMNS))
        v[column] = draw(BAD_Y)
        row.expect, row.reason_words = "quarantine", (column,)
    elif kind == "missing_y":
        for column in draw(st.lists(st.sampled_from(Y_COLUMNS), min_size=1, unique=True)):
            v[column] = draw(MISSING_Y)
    elif kind in ("not_json", "not_object", "deep"):
        if kind == "deep":
            depth = draw(st.one_of(st.integers(33, 300), st.just(50_000)))
            v["extra_benchmark_config_str"] = '{"a":' * depth + "1" + "}" * depth
        else:
            v["extra_benchmark_config_str"] = draw(NOT_JSON if kind == "not_json" else NOT_OBJECT)
        row.expect, row.reason_words = "quarantine", ("extra_benchmark_config_str",)
    elif kind == "huge":
        v["extra_benchmark_config_str"] = json.dumps({"M": 1, "blob": "x" * draw(st.integers(100_000, 300_000))})
    elif kind == "empty_required":
        column = draw(st.sampled_from(REQUIRED_VALUES))
        v[column] = draw(st.sampled_from(["", " ", "\t"]))
        row.expect, row.reason_words = "quarantine", (column,)
    elif kind == "other_time":
        v["timestamp"] = draw(OTHER_TIMES)
        row.expect, row.reason_words = "quarantine", ("timestamp",)
    elif kind == "field_count":
        row.field_delta = draw(st.sampled_from([-14, -5, -1, 1, 3]))
        row.expect, row.reason_words = "quarantine", ("fields where the header has",)
    elif kind == "invalid_utf8":
        row.bad_bytes = (draw(st.integers(0, 99)), draw(INVALID_UTF8))
        row.expect, row.reason_words = "quarantine", ("UTF-8",)
    return row


@dataclass
class CsvFile:
    columns: list[str]
    rows: list[Row]
    data: bytes
    rejected_for: str | None  # a required column the header lacks, if any

    def __repr__(self) -> str:
        shown = reprlib.Repr()
        shown.maxstring = 2000
        return f"CsvFile(columns={self.columns}, rows={len(self.rows)}, rejected_for={self.rejected_for}, data={shown.repr(self.data)})"


def quote(text: str, always: bool) -> str:
    """CSV quoting as RFC 4180 wants it (written here, independently of the code under test)."""
    if always or any(c in text for c in ',"\r\n') or text == "":
        return '"' + text.replace('"', '""') + '"'
    return text


@st.composite
def csv_files(draw, min_rows: int = 0, max_rows: int = 8) -> CsvFile:
    columns = list(COLUMNS)
    if draw(st.booleans()):
        columns = draw(st.permutations(columns))
    for optional in draw(st.lists(st.sampled_from(OPTIONAL_COLUMNS), unique=True, max_size=2)):
        columns.remove(optional)
    rejected_for = None
    if draw(st.integers(0, 7)) == 0:
        rejected_for = draw(st.sampled_from(sorted(RENAMES)))
        renamed = RENAMES[rejected_for] if draw(st.booleans()) else None
        columns = [renamed if c == rejected_for else c for c in columns if c != rejected_for or renamed]
    extras = draw(st.lists(st.sampled_from(EXTRA_COLUMNS), unique=True, max_size=2))
    generated = draw(st.lists(rows(), min_size=min_rows, max_size=max_rows))
    for row in generated:
        row.extras = {name: draw(awkward_text) for name in extras}
    always_quote = draw(st.booleans())
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    out = io.BytesIO()
    if draw(st.booleans()):
        out.write(b"\xef\xbb\xbf")
    out.write(",".join([*columns, *extras]).encode())
    for row in generated:
        out.write(newline.encode() * (2 if row.blank_before else 1))
        out.write(_line(row, columns, always_quote))
    if generated and draw(st.booleans()):
        out.write(newline.encode())
    return CsvFile([*columns, *extras], generated, out.getvalue(), rejected_for)


def _line(row: Row, columns: list[str], always_quote: bool) -> bytes:
    values = [row.values.get(c, row.values.get(_original(c), "")) for c in columns] + list(row.extras.values())
    names = columns + list(row.extras)
    if row.field_delta < 0:
        keep = max(1, len(values) + row.field_delta)  # a row of no field at all would be a blank line
        values, names = values[:keep], names[:keep]
    else:
        values += ["extra"] * row.field_delta
        names += [""] * row.field_delta
    encoded = [quote(v, always_quote).encode() for v in values]
    if row.bad_bytes:
        index = row.bad_bytes[0] % len(encoded)
        encoded[index] = (
            row.bad_bytes[1] + encoded[index] if not encoded[index].startswith(b'"') else b'"' + row.bad_bytes[1] + encoded[index][1:]
        )
    return b",".join(encoded)


def _original(column: str) -> str:
    return next((k for k, v in RENAMES.items() if v == column), column)


# ---------------------------------------------------------------- staging and the oracle


def scratch() -> tempfile.TemporaryDirectory:
    """A throwaway warehouse folder, in memory when the machine has /dev/shm: examples fsync a lot."""
    return tempfile.TemporaryDirectory(dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)


def stage(warehouse: Path, data: bytes, snapshot: str = "c1", sequence: int = 1) -> staging.SnapshotMeta:
    ref = SnapshotRef(
        f"{snapshot}/all_benchmark_data.csv",
        "generated",
        "benchmark/data/all_benchmark_data.csv",
        snapshot,
        datetime(2025, 1, sequence, tzinfo=UTC),
        "generated",
        sequence,
    )
    return staging.stage_snapshot(warehouse, ref, lambda _ref: data, DistinctCache(), ingest_seq=1)


def staged(warehouse: Path, meta: staging.SnapshotMeta, prefix: str) -> pl.DataFrame:
    folder = staging.staging_dir(warehouse) / staging.snapshot_key(meta.snapshot_id)
    return pl.read_parquet(sorted(folder.glob(f"{prefix}-*.parquet")), schema=RUN_ROWS if prefix == "rows" else QUARANTINE)


def assemble_and_check(warehouse: Path, quantiles_ordered: bool = True) -> dict[str, pl.DataFrame]:
    """Assemble and commit the tables, then hold them to SPEC section 5 and the contract checks
    (quantile order too, unless the input's y values may come in any order)."""
    frames = tables.assemble(warehouse, files_at_head=None)
    store.commit_tables(warehouse, frames)
    snaps, mapped, held = frames["snapshots"], frames["run_snapshots"], frames["quarantine"]
    for snap in snaps.iter_rows(named=True):
        assert snap["row_count"] == snap["accepted"] + snap["quarantined"]
        numbers = mapped.filter(pl.col("snapshot_id") == snap["snapshot_id"])["row_number"].to_list()
        numbers += held.filter(pl.col("snapshot_id") == snap["snapshot_id"])["row_number"].to_list()
        assert sorted(numbers) == list(range(1, snap["row_count"] + 1)), "each row is accepted once or quarantined once"
    assert mapped["run_id"].is_in(frames["runs"]["run_id"].implode()).all(), "every accepted row maps to a run"
    assert_reasons(held)
    for check in (checks.run_ids_unique, checks.references_exist, *([checks.quantiles_ordered] if quantiles_ordered else [])):
        outcome = check(warehouse)
        assert outcome.passed, outcome.description
    rejected = snaps.filter(pl.col("status") == "rejected").height
    assert checks.snapshot_accounting(warehouse).passed == (rejected == 0)
    return frames


def assert_reasons(quarantine: pl.DataFrame) -> None:
    blank = quarantine.filter(pl.col("reason").is_null() | (pl.col("reason").str.strip_chars() == ""))
    assert blank.is_empty(), f"quarantine rows without a reason: {blank.rows()[:3]}"


def readable(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def content_chars(text: str) -> Counter[str]:
    """The characters of some CSV text that are not separators or quotes: what no parse may lose."""
    return Counter(text.translate(NOT_CONTENT))


def conserved(data: bytes, accepted: pl.DataFrame, quarantine: pl.DataFrame, columns: list[str]) -> None:
    """Every character of the data rows is in an accepted row's fields or a quarantine row's text."""
    body = data.removeprefix(b"\xef\xbb\xbf")
    cut = min((i for i in (body.find(b"\n"), body.find(b"\r")) if i >= 0), default=len(body))
    expected = content_chars(readable(body[cut:]))
    found: Counter[str] = Counter()
    for raw in quarantine["raw"]:
        found += content_chars(raw)
    for row in accepted.iter_rows(named=True):
        for column in columns:
            if column in RAW_FIELD:
                found += content_chars(row[RAW_FIELD[column]] or "")
        for value in json.loads(row["extra_columns"] or "{}").values():
            found += content_chars(value)
    assert found == expected, f"lost {expected - found}, invented {found - expected}"


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
            assert written == [row.values.get(c, row.values.get(_original(c))) for c in present] + list(row.extras.values())
    for got in accepted.iter_rows(named=True):
        row = by_number[got["row_number"]]
        for column in COLUMNS:
            want = row.values[column] if column in case.columns else None
            assert got[RAW_FIELD[column]] == want, f"row {got['row_number']} {column}: {got[RAW_FIELD[column]]!r} != {want!r}"
        assert json.loads(got["extra_columns"] or "{}") == row.extras
        if got["metric"] == "speed" and got["raw_unit"] == "ms" and got["raw_p50"] is not None:
            assert abs(got["value"] - float(row.values["y_value_50"]) * 1e6) <= 0.5
        assert (got["status"] == "failed") == (row.values["y_value_50"].strip().lower() in ("", "nan", "-nan"))


def readers_agree(data: bytes) -> None:
    """The fast reader, when it takes a file, gives the very records the careful one gives."""
    try:
        header = read_header(data)
    except ValueError:
        return
    try:
        fast = pl.concat(list(iter_records(data, header)), how="vertical_relaxed")
    except (FastPathRefused, ValueError):
        return
    careful = pl.concat(list(iter_records(data, header, careful=True)), how="vertical_relaxed")
    assert fast.equals(careful), "the fast and careful readers disagree"


# ---------------------------------------------------------------- properties


@pytest.mark.slow
@settings(PROFILE)
@given(csv_files())
def test_every_row_of_a_generated_file_is_accepted_verbatim_or_quarantined_with_its_reason(case: CsvFile):
    with trial("generated input", "file of corrupted rows and drifted columns"):
        check_file(case)
        readers_agree(case.data)


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
        ("empty first line", b"\r\x00", "rejected", 0),
        ("empty first line, then a header", ("\n" + HEADER + "\n").encode(), "rejected", 0),
    ]:
        with trial("generated input", "empty or header-only file"):
            meta = stage(tmp_path / name, data)
            assert (meta.status, meta.row_count, meta.accepted, meta.quarantined) == (status, rows, 0, 0), name
            assert (meta.reason is None) == (status == "ingested"), name
            if status == "rejected":
                assert meta.reason.startswith("not a Liger benchmark CSV"), meta.reason


@st.composite
def histories(draw) -> list[list[Row]]:
    """Versions of one file, oldest first, drawn from one pool of rows: rows stay, go, come back."""
    pool = draw(st.lists(rows(), min_size=1, max_size=8))
    return [
        [pool[i] for i in draw(st.lists(st.sampled_from(range(len(pool))), unique=True, max_size=8))]
        for _ in range(draw(st.integers(1, 4)))
    ]


def run_key(values: dict[str, str]) -> tuple[str, ...]:
    return tuple(values[c] for c in RUN_KEY_COLUMNS)


RUN_KEY_COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "x_name",
    "x_value",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
)


@pytest.mark.slow
@settings(PROFILE)
@given(histories())
def test_a_history_of_snapshots_gives_one_run_per_key_with_its_provenance(versions: list[list[Row]]):
    with trial("generated input", "history of snapshots of one file"), scratch() as folder:
        warehouse = Path(folder)
        seen: dict[tuple[str, ...], list[str]] = {}
        for sequence, version in enumerate(versions, 1):
            lines = [HEADER] + [_line(row, list(COLUMNS), always_quote=False).decode("utf-8", errors="surrogateescape") for row in version]
            data = "\n".join(lines).encode("utf-8", errors="surrogateescape") + b"\n"
            meta = stage(warehouse, data, snapshot=f"c{sequence}", sequence=sequence)
            assert (meta.row_count, meta.accepted) == (len(version), sum(r.expect == "accept" for r in version))
            for row in version:
                if row.expect == "accept":
                    seen.setdefault(run_key(row.values), []).append(meta.snapshot_id)
        frames = assemble_and_check(warehouse)
        runs = frames["runs"]
        assert runs.height == len(seen)
        latest = frames["snapshots"]["snapshot_id"][-1]
        for run in runs.iter_rows(named=True):
            key = tuple(run[RAW_FIELD[c]] for c in RUN_KEY_COLUMNS)
            assert (run["first_seen_snapshot"], run["last_seen_snapshot"]) == (seen[key][0], seen[key][-1])
            assert run["in_latest"] == (latest in seen[key])
