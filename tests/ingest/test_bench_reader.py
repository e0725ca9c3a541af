"""The reader benchmark runs at a tiny size, and its candidates read what today's fast reader reads:
the same frames and layout for every file it takes, a refusal for every file it refuses. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_exact_rebuild import NOT_UTF8, VARIANTS

from bench.reader import CANDIDATES, candidate_records
from pipelines.core import settings
from pipelines.ingest.parse.fast import FastPathRefused
from pipelines.ingest.parse.header import NotLigerCsv, read_header
from pipelines.ingest.parse.record_layout import RecordLayout
from pipelines.ingest.parse.records import iter_records


@pytest.mark.slow
def test_the_reader_benchmark_runs_at_a_tiny_size(tmp_path):
    rows = 1500
    command = [sys.executable, "-m", "bench.reader", "--rows", str(rows), "--json", "--data-dir", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=settings.PROJECT_ROOT, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["rows"] == figures["records"] == figures["today"]["records"] == rows
    for reader in CANDIDATES:
        for key in (reader, f"{reader}_bare"):
            assert {"read_s", "read_cpu_s", "wall_s", "cpu_s", "peak_rss_mb", "records"} <= figures[key].keys()
        assert figures[reader]["refused"] is False
        assert figures[reader]["records"] == figures[f"{reader}_bare"]["records"] == rows
        assert figures[f"{reader}_ratio"] > 0 and figures[f"{reader}_cpu_ratio"] > 0 and figures[f"{reader}_bare_ratio"] > 0


def _read(records) -> tuple[pl.DataFrame | None, RecordLayout | None]:
    layout = RecordLayout()
    try:
        return pl.concat(list(records(layout))), layout
    except FastPathRefused:
        return None, None


@pytest.mark.parametrize("reader", CANDIDATES)
@pytest.mark.parametrize("variant", sorted([*VARIANTS, "not_utf8"]))
def test_a_candidate_takes_and_refuses_what_the_fast_reader_does(tmp_path: Path, variant: str, reader: str):
    path = tmp_path / "data.csv"
    path.write_bytes(NOT_UTF8 if variant == "not_utf8" else VARIANTS[variant])
    try:
        header = read_header(path)
    except NotLigerCsv:
        return
    today, today_layout = _read(lambda layout: iter_records(path, header, layout=layout))
    candidate, candidate_layout = _read(lambda layout: candidate_records(path, header, reader, layout))
    assert candidate_layout == today_layout
    if today is None:
        assert candidate is None
    else:
        assert candidate is not None
        assert_frame_equal(candidate, today)
