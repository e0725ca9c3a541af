"""The edges between the statistics, read from their SQL by DuckDB's own parser: nobody keeps them by hand.

A statistic reads the tables its SQL names (`json_serialize_sql`, which parses and never binds, so a query can be
read before any table or macro exists). Names of the query's own common table expressions are left out; a name
of an intermediate (`latest_runs`, computed once per build and not kept) stands for what the intermediate reads.
The series statistics (series_noise, change_points) are computed in Python from `sql/series/`: what those files
read is what they read. Each statistic's inputs are the statistics among the names found: `version_changes`
reads `series_noise`, so that edge, too, comes from the SQL.
"""

from __future__ import annotations

import functools
import graphlib
import json
from collections.abc import Collection, Iterable

import duckdb

from pipelines.core import sql_files
from pipelines.statistics.db import INTERMEDIATES, SERIES_STATISTICS, STATISTICS, STORED_ORDER, statistic_sql


class UnreadableSql(ValueError):
    """A SQL file DuckDB cannot parse: its edges cannot be known."""


@functools.cache
def _parser() -> duckdb.DuckDBPyConnection:
    # One in-memory database for every parse: opening one costs 15-20 ms, a parse under 1 ms, and the definitions
    # read 25 files at every load (half a second, most of the statistics assets' load).
    return duckdb.connect()


def tables_read(sql: str) -> frozenset[str]:
    """The names of the tables and views `sql` reads (every statement of it), without its CTEs' names."""
    with _parser().cursor() as con:
        (serialized,) = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    tree = json.loads(serialized)
    if tree.get("error"):
        raise UnreadableSql(f"DuckDB cannot parse the SQL ({tree.get('error_message', 'no message')})")
    tables: set[str] = set()
    ctes: set[str] = set()
    _walk(tree["statements"], tables, ctes)
    return frozenset(tables - ctes)


def _walk(node: object, tables: set[str], ctes: set[str]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "BASE_TABLE" and "table_name" in node:
            tables.add(node["table_name"])
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            ctes.update(entry["key"] for entry in cte_map.get("map", []))
        for value in node.values():
            _walk(value, tables, ctes)
    elif isinstance(node, list):
        for value in node:
            _walk(value, tables, ctes)


def _sql_of(name: str) -> list[str]:
    """The SQL files a statistic runs: the series statistics run all of `sql/series/`."""
    return sql_files.names("series") if name in SERIES_STATISTICS else [statistic_sql(name), *STORED_ORDER.get(name, ())]


@functools.cache
def reads(name: str) -> frozenset[str]:
    """Every table, view, statistic and intermediate a statistic's SQL reads, intermediates followed to what they read."""
    found: set[str] = set()
    for file in _sql_of(name):
        found |= tables_read(sql_files.text(file))
    for intermediate in set(INTERMEDIATES) & found:
        found |= tables_read(sql_files.text(f"statistics/{intermediate}"))
    return frozenset(found)


@functools.cache
def statistic_inputs() -> dict[str, tuple[str, ...]]:
    """Each statistic with the statistics it reads (sorted), in an order that puts a statistic after its inputs."""
    edges = {name: tuple(sorted(reads(name) & set(STATISTICS) - {name})) for name in STATISTICS}
    order = graphlib.TopologicalSorter(edges).static_order()
    return {name: edges[name] for name in order}


def intermediates_read(name: str) -> tuple[str, ...]:
    """The intermediates a statistic's SQL reads: their SQL is part of its code."""
    return tuple(sorted(set(INTERMEDIATES) & reads(name)))


def needed(selected: Iterable[str] | None) -> frozenset[str]:
    """The statistics a run selecting `selected` must make (None: all of them): those and every statistic they read,
    transitively. The series statistics are computed together, so one of them needs both."""
    if selected is None:
        return frozenset(STATISTICS)
    unknown = set(selected) - set(STATISTICS)
    if unknown:
        raise KeyError(f"not statistics: {', '.join(sorted(unknown))}")
    inputs = statistic_inputs()
    found: set[str] = set()
    frontier = list(selected)
    while frontier:
        name = frontier.pop()
        if name in found:
            continue
        found.add(name)
        frontier.extend(inputs[name])
        if name in SERIES_STATISTICS:
            frontier.extend(SERIES_STATISTICS)
    return frozenset(found)


def in_order(names: Collection[str]) -> list[str]:
    """`names` in dependency order."""
    return [name for name in statistic_inputs() if name in names]
