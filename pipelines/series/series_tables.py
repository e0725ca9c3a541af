"""series_noise and change_points in warehouse.duckdb: the series read by SQL, computed here, written back.

`build(con, baselines, create_table)` runs in the database build after the tables are loaded and before
the SQL statistics (version_changes reads series_noise). Its memory does not grow with the warehouse: the
series (`sql/series/series.sql`, one row each) and their points (`series_points.sql`, in the same order) are
streamed from DuckDB as Arrow record batches, side by side, and cut into batches of whole series by position
(no Python object per run or per series: a warehouse holds millions of series of one or two runs), one range
of groups of about RANGE_ROWS points after the other (`group_ranges`), so that DuckDB sorts no more at once.

Where every series is one block of runs as stored (run ids begin with what makes a series: upstream's and the
synthetic ones), the series are read in ranges of runs in stored order instead (`stored_ranges`), and each
series' points put in order here: DuckDB then sorts rowids, not the series' texts (at 10M runs, 9 of the 51
CPU seconds of this step).

1. Each batch's own estimates (noise.own_noise) are written as they come, into scratch files that DuckDB reads
   as `series_parts` (one row per series) and `series_reruns` (its rerun differences, by pool).
2. `sql/series/series_noise.sql` finishes the noise from them: what a pool shares needs every series of it.
3. Only the groups that hold a series that can hold a step (`candidate_series.sql`, a few percent of them) are
   read again, group after group (in ranges of their own, `candidate_group_points.sql`), and searched one series
   at a time; `change_points.sql` joins the steps found back to runs.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.core import effect, sql_files
from pipelines.series import cause as causes
from pipelines.series import change_points as detection
from pipelines.series import series_noise as noises

# Only these units have a direction (lower is better), so only their series have improved or regressed steps
# (the macro lower_is_better in sql/macros.sql says the same to the SQL).
DIRECTED_UNITS = ("ns", "bytes")
# Series and points per record batch read from DuckDB: what the build holds of them at once. A batch of series
# is computed together (numpy over all of its points), so a larger one costs memory, not time.
SERIES_BATCH_ROWS = 100_000
POINTS_BATCH_ROWS = 250_000
# The most points a batch of series is computed with (unless one series, or one group when whole groups are asked for,
# holds more): the series' own estimates hold several arrays per point, so a batch of SERIES_BATCH_ROWS long series
# held twice the memory of one of short series (at 10M synthetic runs, 4.9 points a series against 2.2 at 1M: the
# build's peak 949 MB against 857, docs/performance.md). 150k since the series are read as stored: the build's peak at
# 10M, in this step, was 965 MB with batches of 250k points, 902 with 150k, in the same time.
BATCH_POINTS = 150_000
# Points per range of groups read (`group_ranges`): DuckDB sorts a range's points at once, and its sort of 3M points
# went past its memory limit by 350 MB, of 1M not; half that under the build's 512 MB (docs/performance.md).
RANGE_ROWS = 500_000
# Runs per range of runs as stored (`stored_ranges`), which DuckDB sorts by rowid alone: at 10M synthetic runs,
# 500k ranges peaked 45 MB higher than ranges of groups, 100k ones 30 MB lower and 5% slower (docs/performance.md).
STORED_RANGE_ROWS = 200_000
# Past every rowid: where the last range of runs as stored ends (`stored_ranges`).
STORED_END = 1 << 62
# The build's own scratch, written as the series stream by (`_own_rows`), read by series_noise.sql and
# candidate_series.sql: Parquet files of one batch each (uncompressed: they are read once or twice, then deleted),
# read through temporary views. Appended to temporary tables instead, at 10M synthetic runs the appends took 4.4 s
# against 1.7 s of writes, the two queries read them 0.5 s slower, and the tables held 250-290 MB of DuckDB's
# memory (docs/performance.md); appended to the database file, each batch went through its write-ahead log.
# Their columns, for a build that has no series (no file to read them from):
SCRATCH_COLUMNS = {
    "series_parts": "group_id VARCHAR, provider VARCHAR, backend VARCHAR, unit VARCHAR, n_points BIGINT, pool UBIGINT,"
    " metric_pool UBIGINT, own BOOLEAN, noise DOUBLE, method VARCHAR, n_differences BIGINT, window_noise DOUBLE, spread DOUBLE",
    "series_reruns": "pool UBIGINT, size DOUBLE",
}
# The series of the groups searched for change points (sql/series/candidate_series.sql): a table of the database
# file, since the cursors that stream it are connections of their own, which see no other connection's temporary views.
CANDIDATES = "series_candidates"
METHOD_NAMES = pa.array(noises.METHODS)


class Series(NamedTuple):
    """A batch of whole series (rows of series.sql or candidate_series.sql) and their points, series after series."""

    table: pa.Table  # one row per series: group_id, provider, backend, n_points, ...
    starts: np.ndarray  # position of each series' first point
    values: np.ndarray
    commits: np.ndarray  # integer codes, equal for equal commits within the batch
    commit_names: pa.ChunkedArray
    rows: np.ndarray  # rowids in runs

    def points(self, i: int) -> slice:
        return slice(int(self.starts[i]), int(self.starts[i + 1]))

    @property
    def series_of(self) -> np.ndarray:
        return np.repeat(np.arange(self.table.num_rows), np.diff(self.starts))


def _series(table: pa.Table, points: pa.Table) -> Series:
    counts = table.column("n_points").to_numpy()
    starts = np.concatenate([[0], np.cumsum(counts)])
    names = points.column("commit")
    encoded = pc.dictionary_encode(names.combine_chunks())
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    # A point without a commit (none in a built warehouse: a run always has a first snapshot) is its own.
    unknown = codes < 0
    codes[unknown] = len(encoded.dictionary) + np.arange(int(unknown.sum()))
    values, rows = points.column("value").to_numpy(), points.column("row_id").to_numpy()
    if "placed_at" in points.column_names:
        order = _series_order(table, points, counts)
        values, codes, names, rows = values[order], codes[order], names.take(order), rows[order]
    return Series(table, starts, values, codes, names, rows)


def _series_order(table: pa.Table, points: pa.Table, counts: np.ndarray) -> np.ndarray:
    """Where each point of points in stored order (points_in_stored_order.sql, each series one block) goes in
    series_points.sql's order, within its series; checked against the series, block by block, by the hash both
    name a series by."""
    series_of = np.repeat(np.arange(table.num_rows), counts)
    if not np.array_equal(points.column("series_hash").to_numpy(), table.column("series_hash").to_numpy()[series_of]):
        raise RuntimeError("the points of a range of runs as stored are not its series' blocks: the two queries disagree")
    # Nulls last, as ORDER BY puts them.
    last = np.iinfo(np.int64).max
    placed_at, observed_at = (pc.fill_null(points.column(name), last).to_numpy() for name in ("placed_at", "observed_at"))
    return np.lexsort((points.column("row_id").to_numpy(), observed_at, placed_at, series_of))


def stored_ranges(con: duckdb.DuckDBPyConnection) -> list[dict[str, int]] | None:
    """Ranges of rowids of about STORED_RANGE_ROWS runs, each holding whole series, when every series is one block of runs
    as stored (`stored_ranges.sql`): read in stored order, a range's points need no sort of texts. None when a series
    is not one block: its points are then read in ranges of groups (`group_ranges`)."""
    (previous,) = con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()
    # The blocks are counted in the order runs are read.
    con.execute("SET preserve_insertion_order = true")
    try:
        n_blocks, n_series, bounds = con.execute(sql_files.text("series/stored_ranges"), {"range_rows": STORED_RANGE_ROWS}).fetchone()
    finally:
        con.execute(f"SET preserve_insertion_order = {bool(previous)}")
    if n_blocks != n_series:
        return None
    edges = [0, *bounds, STORED_END]
    return [{"lo": lo, "hi": hi} for lo, hi in zip(edges, edges[1:])]


def group_ranges(con: duckdb.DuckDBPyConnection, counted_by: str = "series/group_points") -> list[dict[str, str | None]]:
    """The ranges of groups the series are read in (`$lo`, `$hi` of the series SQL), about RANGE_ROWS points each,
    as `counted_by` counts the points per group (group_points.sql: every series'; candidate_group_points.sql: the
    candidates')."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW group_points AS {sql_files.text(counted_by)}")
    try:
        ranges_sql = sql_files.text("series/group_ranges")
        (n_points, _), bounds = con.execute(ranges_sql, {"quantiles": []}).fetchall()[0], []
        parts = -(-n_points // RANGE_ROWS)
        if parts > 1:
            ((_, bounds),) = con.execute(ranges_sql, {"quantiles": [i / parts for i in range(1, parts)]}).fetchall()
    finally:
        con.execute("DROP VIEW group_points")
    edges = [None, *bounds, None]
    return [{"lo": lo, "hi": hi} for lo, hi in zip(edges, edges[1:])]


def stream_series(
    con: duckdb.DuckDBPyConnection,
    series_sql: str,
    points_sql: str,
    ranges: Sequence[dict[str, str | None]],
    whole_groups: bool = False,
) -> Iterator[Series]:
    """The series `series_sql` gives (one row each, with n_points) and the points `points_sql` gives (series
    after series, in the same order), as batches of whole series (`whole_groups`: of whole groups, every
    series of a group_id in one batch), one range of groups after the other (`group_ranges`: both queries take
    `$lo` and `$hi`), so that DuckDB sorts one range's points at a time. Each query runs on a cursor of its own,
    both streamed at once."""
    for bounds in ranges:
        yield from _stream_range(con, series_sql, points_sql, bounds, whole_groups)


def _stream_range(
    con: duckdb.DuckDBPyConnection, series_sql: str, points_sql: str, bounds: dict[str, str | None], whole_groups: bool
) -> Iterator[Series]:
    with con.cursor() as series_cursor, con.cursor() as points_cursor:
        series_reader = series_cursor.sql(series_sql, params=bounds).to_arrow_reader(SERIES_BATCH_ROWS)
        points_reader = points_cursor.sql(points_sql, params=bounds).to_arrow_reader(POINTS_BATCH_ROWS)
        held: list[pa.RecordBatch] = []  # series read and not yet given
        points: list[pa.RecordBatch] = []  # points read and not yet given
        n_points, given_series, given_points = 0, 0, 0
        for batch in [*_batches(series_reader), None]:
            if batch is not None:
                held.append(batch)
            table = pa.Table.from_batches(held, schema=series_reader.schema)
            while cut := _cut(table, whole_groups, final=batch is None):
                needed = int(pc.sum(table.column("n_points").slice(0, cut)).as_py())
                while n_points < needed:
                    more = _next_batch(points_reader)
                    if more is None:
                        raise RuntimeError(
                            f"{points_sql.splitlines()[0]} ended after {given_points + n_points} points, the series counted more"
                        )
                    points.append(more)
                    n_points += more.num_rows
                read = pa.Table.from_batches(points, schema=points_reader.schema)
                yield _series(table.slice(0, cut), read.slice(0, needed))
                given_series, given_points = given_series + cut, given_points + needed
                table, points, n_points = table.slice(cut), read.slice(needed).to_batches(), n_points - needed
            held = table.to_batches()
        if n_points or _next_batch(points_reader) is not None:
            raise RuntimeError(f"the points of {given_series} series run past their {given_points}: the two queries disagree")


def _batches(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
    while (batch := _next_batch(reader)) is not None:
        yield batch


def _next_batch(reader: pa.RecordBatchReader) -> pa.RecordBatch | None:
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None


def _cut(table: pa.Table, whole_groups: bool, final: bool) -> int:
    """How many of the series held (`table`) to compute now: all of them once the reader is done, else (`whole_groups`)
    those before the last group, which may go on in the next batch; of those, no more than BATCH_POINTS points' worth,
    cut between two series (two groups), unless the first series (group) alone holds more."""
    cut = table.num_rows if final or not whole_groups else _last_group_start(table)
    if cut == 0:
        return 0
    upto = np.cumsum(table.column("n_points").slice(0, cut).to_numpy(zero_copy_only=False))
    fits = int(np.searchsorted(upto, BATCH_POINTS, side="right"))
    if fits >= cut:
        return cut
    if not whole_groups:
        return max(fits, 1)
    groups = table.column("group_id").slice(0, cut)
    starts = np.flatnonzero(pc.not_equal(groups.slice(1), groups.slice(0, cut - 1)).to_numpy(zero_copy_only=False)) + 1
    within = starts[starts <= fits]
    return int(within[-1]) if len(within) else int(starts[0]) if len(starts) else cut


def _last_group_start(table: pa.Table) -> int:
    """Where the last group of `table` (ordered by group_id) begins: the rows before it are whole groups."""
    groups = table.column("group_id")
    return int(pc.sum(pc.not_equal(groups, groups[-1]).cast(pa.int64())).as_py() or 0)


def _own_rows(series: Series) -> tuple[pa.Table, pa.Table]:
    """A batch's rows of series_parts (each series' own estimate, and what the candidates are judged by) and of
    series_reruns (its rerun differences with their pool)."""
    n_series = series.table.num_rows
    logs = np.log(series.values)
    own = noises.own_noise(series.series_of, logs, series.commits, n_series)
    counts = np.diff(series.starts)
    nonempty = series.starts[:-1][counts > 0]
    spread = np.zeros(n_series)
    spread[counts > 0] = np.maximum.reduceat(logs, nonempty) - np.minimum.reduceat(logs, nonempty)
    known = own.own
    parts = pa.table(
        {
            **{name: series.table.column(name) for name in ("group_id", "provider", "backend", "unit", "n_points", "pool", "metric_pool")},
            "own": pa.array(known),
            "noise": pa.array(own.noise, mask=~known),
            # Decoded by Arrow from the codes: an array of Python strings took ten times as long.
            "method": pa.DictionaryArray.from_arrays(pa.array(own.method.astype(np.int8), mask=~known), METHOD_NAMES).cast(pa.string()),
            "n_differences": pa.array(np.where(known, own.n_differences, 0).astype(np.int64)),
            "window_noise": pa.array(own.window, mask=np.isnan(own.window)),
            "spread": pa.array(spread),
        }
    )
    reruns = pa.table({"pool": series.table.column("pool").take(pa.array(own.rerun_series)), "size": pa.array(own.rerun_size)})
    return parts, reruns


def _scratch_folder(con: duckdb.DuckDBPyConnection) -> tempfile.TemporaryDirectory:
    """A folder for the scratch files, inside DuckDB's own (the build's spill folder, which a killed build leaves for
    the next writer to sweep) where it has one."""
    (spill,) = con.execute("SELECT current_setting('temp_directory')").fetchone()
    if spill:
        Path(spill).mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(prefix="series-", dir=spill or None)


def _scratch(con: duckdb.DuckDBPyConnection, folder: Path, batches: int) -> None:
    """The temporary views series_parts and series_reruns over the files the batches wrote (empty, of
    SCRATCH_COLUMNS' types, when there were none)."""
    for name, columns in SCRATCH_COLUMNS.items():
        if batches:
            # Spliced in, since a view takes no parameters: the folder is the build's, quotes escaped.
            files = ", ".join("'" + str(folder / f"{name}-{i}.parquet").replace("'", "''") + "'" for i in range(batches))
            select = f"SELECT * FROM read_parquet([{files}])"
        else:
            select = (
                "SELECT " + ", ".join(f"NULL::{type_} AS {column}" for column, type_ in map(str.split, columns.split(", "))) + " LIMIT 0"
            )
        con.execute(f'CREATE TEMP VIEW "{name}" AS {select}')


def _drop_scratch(con: duckdb.DuckDBPyConnection) -> None:
    """Drop series_parts and series_reruns (before their files are deleted)."""
    for name in SCRATCH_COLUMNS:
        con.execute(f'DROP VIEW IF EXISTS temp."{name}"')


def _set_constants(con: duckdb.DuckDBPyConnection) -> None:
    """noise.py's and change_points.py's constants, for the series SQL (bound, never spliced into its text)."""
    constants = {
        "mad_to_run_sigma": float(noises.MAD_TO_RUN_SIGMA),
        "noise_floor": float(noises.NOISE_FLOOR),
        "min_differences": int(noises.MIN_DIFFERENCES),
        "min_points": int(1 + detection.MIN_AFTER),
        "min_shift_noises": float(detection.MIN_SHIFT_NOISES),
    }
    for name, value in constants.items():
        con.execute(f"SET VARIABLE {name} = ?::{'DOUBLE' if isinstance(value, float) else 'BIGINT'}", [value])


class Found(NamedTuple):
    series: int
    step: detection.Step
    cause: str


def compute_steps(series: Series, noise: np.ndarray, candidate: np.ndarray, baselines: Sequence[str]) -> list[Found]:
    """Each candidate series' persistent steps with their cause (cause.py); a batch holds whole groups."""
    group_codes = pc.dictionary_encode(series.table.column("group_id").combine_chunks()).indices.to_numpy(zero_copy_only=False)
    providers, backends = series.table.column("provider"), series.table.column("backend")
    found = []
    for i in np.flatnonzero(candidate):
        steps = detection.detect_runs(series.values[series.points(i)].tolist(), series.commits[series.points(i)].tolist(), float(noise[i]))
        if not steps:
            continue
        # A group's series are side by side (ordered by group): its implementations are these.
        first, last = np.searchsorted(group_codes, group_codes[i], "left"), np.searchsorted(group_codes, group_codes[i], "right")
        group = {(providers[j].as_py(), backends[j].as_py()): j for j in range(first, last)}
        reference = _reference(providers[i].as_py(), backends[i].as_py(), group, baselines)
        for step in steps:
            cause = "code"
            if reference is not None and not np.isnan(noise[reference]):
                cause = causes.cause(
                    step,
                    series.commits[series.points(i)].tolist(),
                    float(noise[i]),
                    series.values[series.points(reference)].tolist(),
                    series.commits[series.points(reference)].tolist(),
                    float(noise[reference]),
                )
            found.append(Found(int(i), step, cause))
    return found


def _reference(provider: str, backend: str, group: dict[tuple[str, str], int], baselines: Sequence[str]) -> int | None:
    """The series that witnesses the host (cause.reference_provider): same backend first, else triton, else any."""
    witness = causes.reference_provider({p for p, _ in group}, baselines, provider)
    if witness is None:
        return None
    have = sorted(b for p, b in group if p == witness)
    chosen = backend if backend in have else ("triton" if "triton" in have else have[0])
    return group[(witness, chosen)]


def warm_up() -> None:
    """Start loading, on a thread of its own, what `build` needs that is slow to import (ruptures, about a second):
    for a caller whose work before `build` does not hold the GIL."""
    detection.import_segmenter_in_background()


def build(
    con: duckdb.DuckDBPyConnection,
    baselines: Sequence[str],
    create_table: Callable,
    ranges: Sequence[dict[str, str | None]] | None = None,
) -> dict[str, float]:
    """Make series_noise and change_points in `con` (create_table: database_build's, for its compression), reading
    the series one range of runs as stored at a time where each is one block (`stored_ranges`), else one range of
    groups at a time (`ranges`, group_ranges' when not given); the candidates' points in ranges of groups of their
    own. Return the seconds each took (reading the series counts in series_noise's)."""
    started = time.perf_counter()
    _set_constants(con)
    con.execute(f'DROP TABLE IF EXISTS "{CANDIDATES}"')
    stored = stored_ranges(con)
    if stored is not None:
        first_pass = stream_series(
            con, sql_files.text("series/series_in_stored_order"), sql_files.text("series/points_in_stored_order"), stored
        )
    else:
        ranges = group_ranges(con) if ranges is None else ranges
        first_pass = stream_series(con, sql_files.text("series/series"), sql_files.text("series/series_points"), ranges)
    with _scratch_folder(con) as folder:
        batches = 0
        for batch in first_pass:
            for name, rows in zip(SCRATCH_COLUMNS, _own_rows(batch)):
                pq.write_table(rows, Path(folder) / f"{name}-{batches}.parquet", compression="none")
            batches += 1
        try:
            _scratch(con, Path(folder), batches)
            create_table(con, "series_noise", sql_files.text("series/series_noise"))
            seconds = {"series_noise": time.perf_counter() - started}
            started = time.perf_counter()
            con.execute(f'CREATE TABLE "{CANDIDATES}" AS {sql_files.text("series/candidate_series")}')
        finally:
            _drop_scratch(con)
    found: list[pa.Table] = []
    candidates, points = sql_files.text("series/candidate_series_range"), sql_files.text("series/series_points_of_candidates")
    # Ranges of their own: the candidates' points are fewer, and every range reads all of runs again.
    for batch in stream_series(con, candidates, points, group_ranges(con, "series/candidate_group_points"), whole_groups=True):
        noise = batch.table.column("noise").to_numpy(zero_copy_only=False).astype(np.float64)
        candidate = batch.table.column("candidate").to_numpy(zero_copy_only=False)
        steps = compute_steps(batch, noise, candidate, baselines)
        if steps:
            found.append(_change_rows(batch, noise, steps))
    con.register("change_point_rows", pa.concat_tables(found) if found else CHANGE_ROWS.empty_table())
    create_table(con, "change_points", sql_files.text("series/change_points"))
    con.unregister("change_point_rows")
    con.execute(f'DROP TABLE "{CANDIDATES}"')
    seconds["change_points"] = time.perf_counter() - started
    return seconds


CHANGE_ROWS = pa.schema(
    [
        ("group_id", pa.string()),
        ("provider", pa.string()),
        ("backend", pa.string()),
        ("before_row", pa.int64()),
        ("after_row", pa.int64()),
        ("before_commit", pa.string()),
        ("after_commit", pa.string()),
        ("before_value", pa.float64()),
        ("after_value", pa.float64()),
        ("confidence", pa.float64()),
        ("cause", pa.string()),
        ("n_before", pa.int64()),
        ("n_after", pa.int64()),
        ("noise", pa.float64()),
        ("status", pa.string()),
        ("below_min_effect", pa.bool_()),
    ]
)


def _change_rows(series: Series, noise: np.ndarray, found: list[Found]) -> pa.Table:
    columns: dict[str, list] = defaultdict(list)
    for i, step, cause in found:
        before, after = int(series.starts[i]) + step.before, int(series.starts[i]) + step.after
        for name in ("group_id", "provider", "backend"):
            columns[name].append(series.table.column(name)[i].as_py())
        columns["before_row"].append(int(series.rows[before]))
        columns["after_row"].append(int(series.rows[after]))
        columns["before_commit"].append(series.commit_names[before].as_py())
        columns["after_commit"].append(series.commit_names[after].as_py())
        columns["before_value"].append(step.before_value)
        columns["after_value"].append(step.after_value)
        columns["confidence"].append(step.confidence)
        columns["cause"].append(cause)
        columns["n_before"].append(len(step.before_points))
        columns["n_after"].append(len(step.after_points))
        columns["noise"].append(float(noise[i]))
        columns["status"].append(step.status)
        columns["below_min_effect"].append(effect.below_min_effect(step.ratio))
    return pa.table({name: columns.get(name, []) for name in CHANGE_ROWS.names}, schema=CHANGE_ROWS)
