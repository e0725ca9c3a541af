"""series_noise and change_points in warehouse.duckdb: the series read by SQL, computed here, written back.

`build(con, baselines, create_table)` runs in the database build after the tables are loaded and before
the SQL statistics (version_changes reads series_noise). The series are read by `sql/series/series.sql`
(one row each) and `sql/series/series_points.sql` (their points, in the same order), both as Arrow, and
cut by position: no Python object per run or per series, since a warehouse holds millions of series of
one or two runs. Only the few series that can hold a step are searched one by one, and
`sql/series/change_points.sql` joins the steps found back to runs.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.core import effect, sql_files
from pipelines.series import cause as causes
from pipelines.series import change_points as detection
from pipelines.series import series_noise as noises

# Only these units have a direction (lower is better), so only their series have improved or regressed steps.
DIRECTED_UNITS = ("ns", "bytes")


class Series(NamedTuple):
    """Every series (sql/series/series.sql) and their points (series_points.sql), points series after series."""

    table: pa.Table  # one row per series: group_id, provider, backend, unit, n_points, pool, metric_pool
    starts: np.ndarray  # position of each series' first point
    values: np.ndarray
    commits: np.ndarray  # integer codes
    commit_names: pa.ChunkedArray
    rows: np.ndarray  # rowids in runs

    def points(self, i: int) -> slice:
        return slice(int(self.starts[i]), int(self.starts[i + 1]))


def read_series(con: duckdb.DuckDBPyConnection) -> Series:
    table = con.sql(sql_files.text("series/series")).to_arrow_table()
    points = con.sql(sql_files.text("series/series_points")).to_arrow_table()
    counts = table.column("n_points").to_numpy()
    starts = np.concatenate([[0], np.cumsum(counts)])
    if starts[-1] != points.num_rows:
        raise RuntimeError(f"sql/series/series_points.sql gave {points.num_rows} points, series.sql counts {starts[-1]}: the two disagree")
    names = points.column("commit")
    encoded = pc.dictionary_encode(names.combine_chunks())
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    # A point without a commit (none in a built warehouse: a run always has a first snapshot) is its own.
    unknown = codes < 0
    codes[unknown] = len(encoded.dictionary) + np.arange(int(unknown.sum()))
    values = points.column("value").to_numpy()
    return Series(table, starts, values, codes, names, points.column("row_id").to_numpy())


def compute_noise(series: Series) -> noises.NoiseArrays:
    counts = np.diff(series.starts)
    return noises.noise_arrays(
        np.repeat(np.arange(len(counts)), counts),
        np.log(series.values),
        series.commits,
        np.unique(series.table.column("pool").to_numpy(), return_inverse=True)[1],
        np.unique(series.table.column("metric_pool").to_numpy(), return_inverse=True)[1],
    )


class Found(NamedTuple):
    series: int
    step: detection.Step
    cause: str


def candidates(series: Series, noise: np.ndarray) -> np.ndarray:
    """The series that can hold a step: a directed unit, a known noise, enough points, and a range of values
    wider than the smallest shift a step may have (the others cannot, and most series are one run or two)."""
    counts = np.diff(series.starts)
    directed = pc.is_in(series.table.column("unit"), pa.array(DIRECTED_UNITS)).to_numpy(zero_copy_only=False)
    logs = np.log(series.values)
    nonempty = series.starts[:-1][counts > 0]
    spread = np.zeros(len(counts))
    spread[counts > 0] = np.maximum.reduceat(logs, nonempty) - np.minimum.reduceat(logs, nonempty)
    with np.errstate(invalid="ignore"):
        wide = spread >= detection.MIN_SHIFT_NOISES * noise
    return np.flatnonzero(directed & (counts >= 1 + detection.MIN_AFTER) & ~np.isnan(noise) & wide)


def compute_steps(series: Series, noise: np.ndarray, baselines: Sequence[str]) -> list[Found]:
    """Each series' persistent steps with their cause (cause.py), for the candidate series."""
    group_codes = pc.dictionary_encode(series.table.column("group_id").combine_chunks()).indices.to_numpy(zero_copy_only=False)
    providers, backends = series.table.column("provider"), series.table.column("backend")
    found = []
    for i in candidates(series, noise):
        steps = detection.detect_runs(series.values[series.points(i)].tolist(), series.commits[series.points(i)].tolist(), float(noise[i]))
        if not steps:
            continue
        # A group's series are side by side (series.sql orders by group): its implementations are these.
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


def build(con: duckdb.DuckDBPyConnection, baselines: Sequence[str], create_table: Callable) -> dict[str, float]:
    """Make series_noise and change_points in `con` (create_table: database_build's, for its compression); return
    the seconds each took (reading the series counts in series_noise's)."""
    started = time.perf_counter()
    series = read_series(con)
    noise = compute_noise(series)
    known = ~np.isnan(noise.noise)
    noise_rows = pa.table(
        {
            "group_id": series.table.column("group_id"),
            "provider": series.table.column("provider"),
            "backend": series.table.column("backend"),
            "n_points": series.table.column("n_points"),
            "noise": pa.array(noise.noise, mask=~known),
            "method": pa.DictionaryArray.from_arrays(pa.array(noise.method.astype(np.int32)), pa.array(noises.METHODS)),
            "n_differences": pa.array(noise.n_differences.astype(np.int64)),
            "window_noise": pa.array(noise.window, mask=np.isnan(noise.window)),
        }
    )
    con.register("series_noise_rows", noise_rows)
    create_table(con, "series_noise", "SELECT * REPLACE (method::VARCHAR AS method) FROM series_noise_rows")
    con.unregister("series_noise_rows")
    seconds = {"series_noise": time.perf_counter() - started}
    started = time.perf_counter()
    con.register("change_point_rows", _change_rows(series, noise.noise, compute_steps(series, noise.noise, baselines)))
    create_table(con, "change_points", sql_files.text("series/change_points"))
    con.unregister("change_point_rows")
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
