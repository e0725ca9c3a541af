"""What the property tests generate: Liger CSV files written the way a careless hand would: rows
with a bad y value, a config that is not a JSON object, a timestamp in another format, a field too
many, an invalid UTF-8 byte, broken quoting; files with a BOM, CRLF or CR endings, columns reordered,
renamed, missing or added. Each generated row says what it must become (accepted, or quarantined
with the words its reason must hold), as the SPEC says, not as the code does.

The Hypothesis profiles are registered here, once: examples per property 300 when CI is set, else 100
(profiles `robustness-ci`, `robustness-dev`; HYPOTHESIS_PROFILE picks another registered profile).
Property modules import `PROFILE` and decorate each property with `@settings(PROFILE)`.
"""

from __future__ import annotations

import io
import json
import os
import reprlib
from dataclasses import dataclass, field
from datetime import datetime

from conftest import HEADER
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from pipelines.core.schemas import REQUIRED_COLUMNS, REQUIRED_VALUES
from pipelines.core.settings import PROJECT_ROOT

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
Y_COLUMNS = ("y_value_50", "y_value_20", "y_value_80")

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
# A good y value is above zero in every format below (`str(int(v))` of 0.5 is 0, which is no measurement).
y_numbers = st.floats(min_value=1, max_value=1e6, allow_nan=False, allow_infinity=False)
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
    p20, p50, p80 = sorted(draw(st.lists(y_numbers, min_size=3, max_size=3)))
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


# Numbers that are no latency or peak memory: not above zero, or 0 once in ns or bytes.
NOT_POSITIVE_Y = st.sampled_from(["0", "-0", "0.0", "-5", "-1e-3", "1e-320", " 0 "])
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
                "not_positive_y",
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
    elif kind == "not_positive_y":
        v["metric_name"], v["metric_unit"] = draw(st.sampled_from([("speed", "ms"), ("memory", "MB")]))
        column = draw(st.sampled_from(Y_COLUMNS))
        v[column] = draw(NOT_POSITIVE_Y)
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


RUN_KEY = (
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
    # A run key and timestamp at most once per file: a repeat with other values is a conflict (SPEC section 5), whose
    # own property and oracle are in test_accounting_conflicts.
    generated = draw(
        st.lists(rows(), min_size=min_rows, max_size=max_rows, unique_by=lambda row: tuple(row.values.get(k) for k in RUN_KEY))
    )
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
        out.write(row_line(row, columns, always_quote))
    if generated and draw(st.booleans()):
        out.write(newline.encode())
    return CsvFile([*columns, *extras], generated, out.getvalue(), rejected_for)


def row_line(row: Row, columns: list[str], always_quote: bool) -> bytes:
    values = [row.values.get(c, row.values.get(original_column(c), "")) for c in columns] + list(row.extras.values())
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


def original_column(column: str) -> str:
    return next((k for k, v in RENAMES.items() if v == column), column)
