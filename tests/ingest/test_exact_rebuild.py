"""Nothing lost, byte for byte: every snapshot rebuilt from the tables hashes to the original's sha256."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import HEADER, UpstreamRepo, build_warehouse, git, liger_row

from pipelines.__main__ import main
from pipelines.exports import liger_csv
from pipelines.ingest import staging
from pipelines.ingest.parse import fast as parse_fast
from pipelines.ingest.parse import header as parse_header
from pipelines.ingest.parse import record_layout as parse_layout
from pipelines.ingest.parse import records as parse


def test_every_real_snapshot_rebuilds_to_its_content_sha256(real_warehouse: Path):
    snapshots = pl.read_parquet(real_warehouse / "snapshots.parquet")
    assert snapshots.height == 40
    differing = []
    for snapshot_id, content_sha256 in snapshots.select("snapshot_id", "content_sha256").iter_rows():
        try:
            rebuilt = liger_csv.rebuild(real_warehouse, liger_csv.resolve_snapshot(real_warehouse, snapshot_id))
        except liger_csv.ExportError as exc:
            differing.append(f"{snapshot_id} ({exc})")
            continue
        if hashlib.sha256(rebuilt).hexdigest() != content_sha256:
            differing.append(snapshot_id)
    assert not differing, f"{len(differing)} snapshot(s) do not rebuild byte for byte: {', '.join(differing)}"


# --- small synthetic files: every way a file can differ from what upstream's csv writer writes -------

ROW = liger_row()
FAILED = liger_row(provider="torch", y50="nan", y20="", y80="0.7")
BAD_CONFIG = liger_row(provider="huggingface", config="[1, 2]")
SHORT = "rms_norm,liger,forward,speed,ms,H,hidden size,2048,0.5"
NUMBERS = liger_row(provider="cutile", y50="0.50", y20="4e-1", y80="6.0E-1")
OVER_QUOTED = liger_row(provider="triton").replace(",triton,", ',"triton",')
NEWLINE_IN_FIELD = liger_row(provider="apex", x_label='"hidden\r\nsize"')
LF_IN_FIELD = liger_row(provider="apex2", x_label='"hidden\nsize"')
BARE_QUOTE = liger_row(provider="xformers", x_label='hidden "size"')
BROKEN_QUOTE = liger_row(provider="flash", x_label='"hidden"size')


def lines(*rows: str, end: str = "\r\n", header: str = HEADER) -> str:
    return "".join(line + end for line in (header, *rows))


VARIANTS: dict[str, bytes] = {
    "crlf": lines(ROW, FAILED).encode(),
    "lf": lines(ROW, FAILED, end="\n").encode(),
    "no_final_newline": lines(ROW, FAILED).removesuffix("\r\n").encode(),
    "no_final_newline_lf": lines(ROW, end="\n").removesuffix("\n").encode(),
    "header_only_no_final_newline": HEADER.encode(),
    "blank_line_at_end": (lines(ROW, FAILED) + "\r\n").encode(),
    "blank_lines_at_end_lf": (lines(ROW, end="\n") + "\n\n").encode(),
    "blank_lines_in_the_middle": lines(ROW, "", "", FAILED).encode(),
    "blank_line_after_the_header": lines("", ROW).encode(),
    "whitespace_lines": (lines(ROW, "   ", FAILED) + "\t\r\n").encode(),
    "whitespace_line_at_end_no_newline": (lines(ROW) + "  ").encode(),
    "mixed_line_ends": (HEADER + "\r\n" + ROW + "\n" + FAILED + "\r" + NUMBERS + "\r\n").encode(),
    "bom": ("\ufeff" + lines(ROW, FAILED)).encode(),
    "bom_lf_blank_end": ("\ufeff" + lines(ROW, end="\n") + "\n").encode(),
    "number_text": lines(NUMBERS, ROW).encode(),
    "over_quoted_field": lines(ROW, OVER_QUOTED).encode(),
    "quoted_header": lines(ROW, header=HEADER.replace("kernel_name,", '"kernel_name",')).encode(),
    "line_break_in_a_field": lines(ROW, NEWLINE_IN_FIELD, LF_IN_FIELD).encode(),
    "bare_quote_in_a_field": lines(ROW, BARE_QUOTE).encode(),
    "quarantined_rows": lines(ROW, BAD_CONFIG, SHORT, BROKEN_QUOTE, FAILED).encode(),
    "rejected_snapshot": b'kernel_name,foo\na,b\n\nc,"d"\n',
    "rejected_no_final_newline": b"kernel_name,foo\r\na,b",
}
NOT_UTF8 = lines(ROW).encode() + b"rms_norm,liger,forward,speed,ms,H,\xff\xfe,1,0.5,0.4,0.6,{},GPU,2025-01-01 10:00:00,0.5.0\r\n"


def file_of(variant: str) -> str:
    return f"benchmark/data/all_benchmark_data_{variant}.csv"


@pytest.fixture(scope="module")
def variant_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("variants")
    repo = UpstreamRepo(root / "upstream")
    for variant, data in {**VARIANTS, "not_utf8": NOT_UTF8}.items():
        target = repo.path / file_of(variant)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "--quiet", "-m", "variants", date="2025-01-01T00:00:00+00:00")
    return build_warehouse(root / "warehouse", str(repo.path), root / "cache")


def snapshot_of(warehouse: Path, variant: str) -> liger_csv.Snapshot:
    name = Path(file_of(variant)).name
    [snapshot_id] = [s for s in pl.read_parquet(warehouse / "snapshots.parquet")["snapshot_id"] if s.endswith(f"/{name}")]
    return liger_csv.resolve_snapshot(warehouse, snapshot_id)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_file_written_otherwise_rebuilds_byte_for_byte(variant_warehouse: Path, variant: str):
    snapshot = snapshot_of(variant_warehouse, variant)
    rebuilt = liger_csv.rebuild(variant_warehouse, snapshot)
    assert rebuilt == VARIANTS[variant]
    assert hashlib.sha256(rebuilt).hexdigest() == snapshot.content_sha256


def test_the_layout_columns_say_how_the_file_was_written(variant_warehouse: Path):
    snapshots = pl.read_parquet(variant_warehouse / "snapshots.parquet").with_columns(
        pl.col("source_file").str.extract(r"all_benchmark_data_(.*)\.csv").alias("variant")
    )
    row = {r["variant"]: r for r in snapshots.iter_rows(named=True)}
    assert row["crlf"]["line_end"] == "\r\n" and row["crlf"]["final_newline"] and row["crlf"]["layout"] is None
    assert not row["crlf"]["bom"] and row["bom"]["bom"]
    assert row["lf"]["line_end"] == "\n" and row["lf"]["layout"] is None
    assert not row["no_final_newline"]["final_newline"]
    assert json.loads(row["no_final_newline"]["layout"]) == {"after": {"2": ""}}
    assert json.loads(row["blank_line_at_end"]["layout"]) == {"after": {"2": "\r\n\r\n"}}
    assert json.loads(row["blank_lines_in_the_middle"]["layout"]) == {"after": {"1": "\r\n\r\n\r\n"}}
    assert json.loads(row["over_quoted_field"]["layout"]) == {"lines": {"2": OVER_QUOTED}}
    # Blank lines are no records; a line of spaces is a row (quarantined: it has one field).
    assert row["blank_lines_in_the_middle"]["row_count"] == 2
    assert (row["whitespace_lines"]["row_count"], row["whitespace_lines"]["quarantined"]) == (4, 2)


def test_a_file_that_cannot_be_rebuilt_says_why_and_is_not_written(variant_warehouse: Path, tmp_path, monkeypatch, capsys):
    snapshot = snapshot_of(variant_warehouse, "not_utf8")
    with pytest.raises(liger_csv.NotExact, match="row 2 is not valid UTF-8"):
        liger_csv.rebuild(variant_warehouse, snapshot)
    monkeypatch.setenv("WAREHOUSE_DIR", str(variant_warehouse))
    out = tmp_path / "out.csv"
    assert main(["export-liger-csv", "--snapshot", snapshot.snapshot_id, "--out", str(out)]) == 1
    error = capsys.readouterr().err
    assert "cannot be rebuilt byte for byte: row 2 is not valid UTF-8" in error and error[-1] == "\n" and error.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize("variant", ["crlf", "lf", "no_final_newline", "no_final_newline_lf", "blank_line_at_end", "bom_lf_blank_end"])
def test_the_fast_reader_takes_a_regular_file_whatever_its_ends(variant: str):
    # The BOM, the line end and what follows the last row need no careful reading (a 10M-row file without
    # its final newline stays on the fast path).
    data = VARIANTS[variant]
    layout = parse_layout.RecordLayout()
    frames = list(parse.iter_records(data, parse_header.read_header(data), layout=layout))
    assert sum(f.height for f in frames) == data.count(b"rms_norm")
    assert layout.lines == {} and layout.inexact is None


@pytest.mark.parametrize("variant", ["blank_lines_in_the_middle", "over_quoted_field", "number_text", "mixed_line_ends"])
def test_the_fast_reader_refuses_what_only_the_careful_one_records(variant: str):
    data = VARIANTS[variant]
    if variant == "number_text":  # other number text is no layout at all: the y values are kept verbatim
        list(parse.iter_records(data, parse_header.read_header(data)))
        return
    with pytest.raises(parse_fast.FastPathRefused):
        list(parse.iter_records(data, parse_header.read_header(data)))


def test_a_meta_staged_before_layouts_loads_with_defaults():
    meta = {
        "snapshot_id": "abc/x.csv",
        "source": "s",
        "source_file": "x.csv",
        "commit": None,
        "committed_at": None,
        "subject": None,
        "sequence": 1,
        "ingest_seq": 1,
        "content_sha256": "0" * 64,
        "status": "ingested",
        "reason": None,
        "header": [],
        "row_count": 0,
        "accepted": 0,
        "quarantined": 0,
        "normalizer_version": 3,
    }
    loaded = staging.SnapshotMeta(**meta)
    assert (loaded.bom, loaded.line_end, loaded.final_newline, loaded.layout) == (False, "\r\n", True, {})


def test_render_all_gives_each_record_the_text_render_gives_it():
    """One writer for a whole snapshot: a field holding line breaks, quotes or commas, a lone empty field, None, a
    float and no fields at all are each their own record's text."""
    records = [["a", "b"], [None], [""], ["x,y", 'q"q', "line\nbreak", "cr\r", "crlf\r\n"], [1.5, None, "é"], [], ["", None]]
    assert parse_layout.render_all(records) == [parse_layout.render(record) for record in records]
