"""`python -m bench.reader --rows N`: today's CSV reader against faster readers given its checks.

Issue 17 saw polars' streaming reader and DuckDB's read_csv (all text) read the
synthetic file in a quarter and a half of the time `parse.iter_records` takes,
but without the checks that make the fast path safe. This times, each in a
fresh process on one synthetic file (bench.synthetic, cached under
--data-dir), the whole read as staging does it (every frame of
`iter_records(path, read_header(path))`) against each candidate with the
same checks, giving the same record frames (the wall time of the read and its CPU time, all threads):

- the file's bytes after the header are exactly its records as Python's csv
  writer writes them, each followed by the header's line end (the fast path's
  layout check, parse_fast._rendered_block): wrong field counts, blank lines,
  other quoting and replaced bytes all fail it;
- no value holds a line break (a quote left open), no block shows suspect
  quoting (parse_fast._suspect_block), the file has an even number of quotes;
- the reader itself fails on invalid UTF-8 or a row of the wrong width.

A file that fails any of them raises FastPathRefused, as today's fast path does,
so it goes to the careful reader. Each candidate is also timed bare (no checks,
no frames), the figure the issue quoted. Ratios are candidate / today: below 1
is faster.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.core import settings
from pipelines.ingest.parse import fast as parse_fast
from pipelines.ingest.parse.fast import FastPathRefused
from pipelines.ingest.parse.header import MAX_HEADER_BYTES, PARSE_ERROR, RAW_TEXT, ROW_NUMBER, UTF8_BOM, Header, read_header
from pipelines.ingest.parse.record_layout import RecordLayout, render

CANDIDATES = ("polars", "duckdb")
DUCKDB_BATCH_ROWS = 1 << 17


# ---------------------------------------------------------------- the candidates' record batches


def _polars_batches(path: Path) -> Iterator[tuple[pa.Table, pl.DataFrame]]:
    """(the batch as the checks take it, the batch as a frame) for each batch polars reads."""
    frames = pl.scan_csv(path, infer_schema=False, empty_string_is_null=False).collect_batches()
    for frame in frames:
        # As Arrow's reader gives them (32-bit offsets): the fast path's rendering takes string columns.
        table = frame.to_arrow(compat_level=pl.CompatLevel.oldest())
        yield table.cast(pa.schema([(name, pa.string()) for name in table.schema.names])), frame


def _duckdb_batches(path: Path) -> Iterator[tuple[pa.Table, pl.DataFrame]]:
    import duckdb

    sql = "SELECT * FROM read_csv(?, all_varchar = true, header = true, delim = ',', quote = '\"', escape = '\"', strict_mode = true)"
    with duckdb.connect() as con:
        try:
            for batch in con.sql(sql, params=[str(path)]).to_arrow_reader(DUCKDB_BATCH_ROWS):
                # DuckDB reads an empty field as NULL; today's reader (and the careful one) as an empty text.
                table = pa.table([pc.fill_null(column, "") for column in batch.columns], names=batch.schema.names)
                frame = pl.from_arrow(table)
                assert isinstance(frame, pl.DataFrame)
                yield table, frame
        except duckdb.Error:
            raise FastPathRefused() from None


_BATCHES = {"polars": _polars_batches, "duckdb": _duckdb_batches}
# What each reader raises on a row it cannot take (wrong width, invalid UTF-8, a quote left open at the end).
_READER_ERRORS: tuple[type[Exception], ...] = (pl.exceptions.PolarsError, pa.ArrowException)


class _Body:
    """The file after its header line, its tail (the line breaks that end it) read as one line end, so that
    the bytes are exactly the records' rendered lines when the file is written as the writer writes it."""

    def __init__(self, handle: BinaryIO, path: Path, header: Header, layout: RecordLayout):
        self.handle = handle
        size = self.handle.seek(0, os.SEEK_END)
        self.handle.seek(0)
        head = self.handle.read(len(UTF8_BOM) + MAX_HEADER_BYTES + 2)
        parse_fast._take_header_layout(head, header, layout)
        self.tail = parse_fast._file_tail(path)
        start = (len(UTF8_BOM) if layout.bom else 0) + len(render(header.columns).encode())
        end = size - len(self.tail.encode())
        if end < start:
            raise FastPathRefused()
        self.quotes = head[:start].count(b'"')
        self.handle.seek(start)
        self.left = end - start
        self.end = layout.line_end.encode()
        self.suffix = self.end

    def take(self, count: int) -> bytes:
        """The next `count` bytes of the body (fewer at its end), the tail read as one line end."""
        data = self.handle.read(min(count, self.left))
        self.left -= len(data)
        if len(data) < count:
            data, self.suffix = data + self.suffix[: count - len(data)], self.suffix[count - len(data) :]
        return data

    def done(self) -> bool:
        return self.left == 0 and not self.suffix


def candidate_records(path: Path, header: Header, reader: str, layout: RecordLayout | None = None) -> Iterator[pl.DataFrame]:
    """Frames as `parse.iter_records(path, header)` gives them, read by `reader` (one of CANDIDATES); raises
    FastPathRefused where the fast path would, possibly after yielding some frames."""
    layout = layout if layout is not None else RecordLayout()
    with open(path, "rb") as handle:
        body = _Body(handle, path, header, layout)
        if body.take(len(body.end)) != body.end:
            raise FastPathRefused()
        next_row = 1
        batches = parse_fast._last_flagged(_BATCHES[reader](path))
        while True:
            try:
                (table, frame), last = next(batches, ((None, None), True))
            except _READER_ERRORS:
                raise FastPathRefused() from None
            if table is None or frame is None:
                break
            if last and reader == "polars":
                table, frame = _without_blank_tail(table, frame, body.tail)
            if tuple(table.schema.names) != header.columns:
                raise FastPathRefused()
            if table.num_rows == 0:
                continue
            if any(parse_fast._has_line_break(batch) for batch in table.to_batches()):
                raise FastPathRefused()
            rendered = parse_fast._rendered_block(table, body.end)
            block = body.take(len(rendered))
            body.quotes += block.count(b'"')
            if block != rendered or parse_fast._suspect_block(block):
                raise FastPathRefused()
            yield frame.with_columns(
                pl.int_range(next_row, next_row + frame.height, dtype=pl.Int64).alias(ROW_NUMBER),
                pl.lit(None, pl.String).alias(PARSE_ERROR),
                pl.lit(None, pl.String).alias(RAW_TEXT),
            )
            next_row += frame.height
        # Bytes left over are lines the reader did not give as records (blank lines, say).
        if not body.done() or body.quotes % 2 == 1:
            raise FastPathRefused()
    layout.last_record = next_row - 1
    if body.tail != layout.line_end:
        layout.after[layout.last_record] = body.tail


def _without_blank_tail(table: pa.Table, frame: pl.DataFrame, tail: str) -> tuple[pa.Table, pl.DataFrame]:
    """Polars reads each blank line after the last record as a record of empty fields; Arrow skips them."""
    blank = max(0, tail.count("\n") - 1)
    if blank == 0 or table.num_rows < blank:
        return table, frame
    if any(value != "" for row in frame.tail(blank).iter_rows() for value in row):
        raise FastPathRefused()
    return table.slice(0, table.num_rows - blank), frame.head(frame.height - blank)


# ---------------------------------------------------------------- the phases (each in a process of its own)


def _read(path: Path) -> dict:
    from pipelines.ingest.parse.records import iter_records

    records = sum(frame.height for frame in iter_records(path, read_header(path)))
    return {"records": records}


def _read_candidate(path: Path, reader: str) -> dict:
    try:
        return {"records": sum(frame.height for frame in candidate_records(path, read_header(path), reader)), "refused": False}
    except FastPathRefused:
        return {"records": 0, "refused": True}


def _read_bare(path: Path, reader: str) -> dict:
    return {"records": sum(_bare_rows(path, reader))}


def _bare_rows(path: Path, reader: str) -> Iterator[int]:
    """The reader alone: polars' frames or DuckDB's Arrow batches, no checks, no conversion."""
    if reader == "polars":
        yield from (frame.height for frame in pl.scan_csv(path, infer_schema=False, empty_string_is_null=False).collect_batches())
        return
    import duckdb

    with duckdb.connect() as con:
        yield from (
            batch.num_rows
            for batch in con.sql("SELECT * FROM read_csv(?, all_varchar = true)", params=[str(path)]).to_arrow_reader(DUCKDB_BATCH_ROWS)
        )


def phase(name: str, csv: str) -> dict:
    path = Path(csv)
    started, cpu = time.perf_counter(), time.process_time()
    if name == "today":
        out = _read(path)
    elif name.endswith("-bare"):
        out = _read_bare(path, name.removesuffix("-bare"))
    else:
        out = _read_candidate(path, name)
    return {**out, "read_s": time.perf_counter() - started, "read_cpu_s": time.process_time() - cpu}


# ---------------------------------------------------------------- measuring


def compare(csv: Path, candidates: tuple[str, ...] = CANDIDATES) -> dict:
    from bench.__main__ import measure

    def timed(name: str) -> dict:
        command = [sys.executable, "-m", "bench.reader", "--phase", name, str(csv)]
        measured = measure(name, command)
        return {**(measured.detail or {}), "wall_s": measured.wall_s, "cpu_s": measured.cpu_s, "peak_rss_mb": measured.peak_rss_mb}

    today = timed("today")
    figures: dict = {"records": today["records"], "today": today}
    print(f"today (parse.iter_records): read {today['read_s']:.2f} s, CPU {today['read_cpu_s']:.2f} s, {today['records']:,} records")
    for reader in candidates:
        checked, bare = timed(reader), timed(f"{reader}-bare")
        figures[reader], figures[f"{reader}_bare"] = checked, bare
        figures[f"{reader}_ratio"] = checked["read_s"] / today["read_s"]
        figures[f"{reader}_bare_ratio"] = bare["read_s"] / today["read_s"]
        figures[f"{reader}_cpu_ratio"] = checked["read_cpu_s"] / today["read_cpu_s"]
        state = "refused the file" if checked["refused"] else f"{checked['records']:,} records"
        print(
            f"{reader} + checks: read {checked['read_s']:.2f} s, {figures[f'{reader}_ratio']:.2f}x today's;"
            f" CPU {checked['read_cpu_s']:.2f} s, {figures[f'{reader}_cpu_ratio']:.2f}x today's; {state}"
        )
        print(f"{reader} bare: read {bare['read_s']:.2f} s, {figures[f'{reader}_bare_ratio']:.2f}x today's; CPU {bare['read_cpu_s']:.2f} s")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reader", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the synthetic CSV (default 1000000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=settings.PROJECT_ROOT / "data" / "bench", help="where synthetic CSVs are cached")
    parser.add_argument("--json", action="store_true", help="also print one JSON object with the figures")
    parser.add_argument("--phase", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(phase(*args.phase)))
        return 0
    from bench.__main__ import generated_csv

    csv = generated_csv(args.data_dir, args.rows, args.seed)
    print(f"{args.rows:,} synthetic rows (seed {args.seed}), {os.cpu_count()} cores")
    figures = compare(csv)
    if args.json:
        print(json.dumps({**figures, "rows": args.rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
