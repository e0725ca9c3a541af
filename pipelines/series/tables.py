"""series_noise and change_points in warehouse.duckdb: the series read by SQL, computed here, written back.

`build(con, baselines)` runs in the database build after the tables are loaded and before the SQL
statistics (version_changes reads series_noise). The series are read by `sql/series/series.sql` (one row
each) and `sql/series/series_points.sql` (their points, in the same order, as Arrow: no Python object
per run), cut by position, and `sql/series/change_points.sql` joins the steps found back to runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.core import sql_files
from pipelines.series import cause as causes
from pipelines.series import change_points as detection
from pipelines.series import noise as noises

# Only these units have a direction (lower is better), so only their series have improved or regressed steps.
DIRECTED_UNITS = frozenset({"ns", "bytes"})


@dataclass(frozen=True)
class Series:
    group_id: str
    provider: str
    backend: str
    kernel: str
    pass_: str
    metric: str
    gpu_name: str
    unit: str
    start: int  # position of its first point
    n_points: int


class Points(NamedTuple):
    """Every series' points, series after series: values, commits as integer codes and as text, rowids in runs."""

    values: np.ndarray
    commits: np.ndarray
    commit_names: pa.ChunkedArray
    rows: np.ndarray


def read_series(con: duckdb.DuckDBPyConnection) -> tuple[list[Series], Points]:
    """Every series (sql/series/series.sql) and their points (series_points.sql)."""
    series, start = [], 0
    for group_id, provider, backend, kernel, pass_, metric, gpu_name, unit, n in con.execute(sql_files.text("series/series")).fetchall():
        series.append(Series(group_id, provider, backend, kernel, pass_, metric, gpu_name, unit, start, int(n)))
        start += int(n)
    points = con.sql(sql_files.text("series/series_points")).to_arrow_table()
    if points.num_rows != start:
        raise RuntimeError(f"sql/series/series_points.sql gave {points.num_rows} points, series.sql counts {start}: the two disagree")
    names = points.column("commit")
    codes = pc.dictionary_encode(names.combine_chunks()).indices.to_numpy(zero_copy_only=False)
    return series, Points(points.column("value").to_numpy(), codes, names, points.column("row_id").to_numpy())


def compute(series: Sequence[Series], values: np.ndarray, commits: np.ndarray, baselines: Sequence[str]) -> tuple[list, list]:
    """(noise per series, steps per series as (series index, Step, cause)), positions into `values`."""
    logs = np.log(values)
    slices = [slice(s.start, s.start + s.n_points) for s in series]
    estimated = noises.series_noises(
        (
            i,
            (s.kernel, s.pass_, s.metric, s.gpu_name, s.provider, s.backend),
            (s.metric, s.gpu_name),
            logs[slices[i]].tolist(),
            commits[slices[i]].tolist(),
        )
        for i, s in enumerate(series)
    )
    noise = [estimated[i] for i in range(len(series))]
    by_key = {(s.group_id, s.provider, s.backend): i for i, s in enumerate(series)}
    providers: dict[str, set[str]] = defaultdict(set)
    backends: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s in series:
        providers[s.group_id].add(s.provider)
        backends[(s.group_id, s.provider)].append(s.backend)
    found = []
    for i, s in enumerate(series):
        if s.unit not in DIRECTED_UNITS or s.n_points < 1 + detection.MIN_AFTER or noise[i].noise is None:
            continue
        steps = detection.detect(values[slices[i]].tolist(), noise[i].noise)
        if not steps:
            continue
        reference = _reference(s, providers, backends, by_key, baselines)
        own_commits = commits[slices[i]].tolist()
        for step in steps:
            cause = "code"
            if reference is not None and noise[reference].noise is not None:
                cause = causes.cause(
                    step,
                    own_commits,
                    noise[i].noise,
                    values[slices[reference]].tolist(),
                    commits[slices[reference]].tolist(),
                    noise[reference].noise,
                )
            found.append((i, step, cause))
    return noise, found


def _reference(s: Series, providers, backends, by_key, baselines: Sequence[str]) -> int | None:
    """The index of the series that witnesses the host (cause.reference_provider), same backend first, else triton, else any."""
    provider = causes.reference_provider(providers[s.group_id], baselines, s.provider)
    if provider is None:
        return None
    have = backends[(s.group_id, provider)]
    backend = s.backend if s.backend in have else ("triton" if "triton" in have else have[0])
    return by_key[(s.group_id, provider, backend)]


def build(con: duckdb.DuckDBPyConnection, baselines: Sequence[str], create_table) -> None:
    """Make series_noise and change_points in `con` (create_table: database_build's, for its compression)."""
    series, points = read_series(con)
    noise, found = compute(series, points.values, points.commits, baselines)
    con.register(
        "series_noise_rows",
        pa.table(
            {
                "group_id": [s.group_id for s in series],
                "provider": [s.provider for s in series],
                "backend": [s.backend for s in series],
                "n_points": pa.array([s.n_points for s in series], pa.int64()),
                "noise": pa.array([n.noise for n in noise], pa.float64()),
                "method": [n.method for n in noise],
                "n_differences": pa.array([n.n_differences for n in noise], pa.int64()),
            }
        ),
    )
    create_table(con, "series_noise", "SELECT * FROM series_noise_rows")
    con.unregister("series_noise_rows")
    change_rows = _change_rows(series, noise, found, points)
    con.register("change_point_rows", change_rows)
    create_table(con, "change_points", sql_files.text("series/change_points"))
    con.unregister("change_point_rows")


def _change_rows(series, noise, found, points: Points) -> pa.Table:
    columns: dict[str, list] = defaultdict(list)
    for i, step, cause in found:
        s = series[i]
        before, after = s.start + step.before, s.start + step.after
        columns["group_id"].append(s.group_id)
        columns["provider"].append(s.provider)
        columns["backend"].append(s.backend)
        columns["before_row"].append(int(points.rows[before]))
        columns["after_row"].append(int(points.rows[after]))
        columns["before_commit"].append(points.commit_names[before].as_py())
        columns["after_commit"].append(points.commit_names[after].as_py())
        columns["before_value"].append(step.before_value)
        columns["after_value"].append(step.after_value)
        columns["confidence"].append(step.confidence)
        columns["cause"].append(cause)
        columns["n_before"].append(len(step.before_points))
        columns["n_after"].append(len(step.after_points))
        columns["noise"].append(noise[i].noise)
    schema = pa.schema(
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
        ]
    )
    return pa.table({name: columns.get(name, []) for name in schema.names}, schema=schema)
