"""The code version and the build key of each statistic and of warehouse.duckdb as a whole (`storage.builds`).

A statistic's code is the builder with the SQL it runs: its own file, the macros and the intermediates every
statistic shares. The series statistics (series_noise, change_points) are computed in Python by
`pipelines.series`, which no SQL statistic's version counts, with ruptures' version. A statistic's key adds the
tables' key, the keys of the statistics it reads and the baselines: a change to one SQL file, a comment
included (it is the statistic's description in the file), gives that statistic and those that read it a new
data version, and leaves the others' as they were.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pipelines.core import code_version, layout, sql_files
from pipelines.statistics.db import CHECKS, SERIES_STATISTICS, STATISTIC_INPUTS, STATISTICS, statistic_sql
from pipelines.storage import builds

BUILDER = "pipelines.statistics.database_build"
SERIES = "pipelines.series"
SHARED_SQL = ("macros", "statistics/latest_runs")


@functools.cache
def statistic_code_version(name: str) -> str:
    if name in SERIES_STATISTICS:
        return code_version.code_version(
            [BUILDER, f"{SERIES}.series_tables"], sql=[*SHARED_SQL, *sql_files.names("series")], libraries=["ruptures"]
        )
    return code_version.code_version([BUILDER], sql=[*SHARED_SQL, statistic_sql(name)], leave_out=[SERIES])


@functools.cache
def database_code_version() -> str:
    """What the file holds beside the statistics: the tables' copies and comments, the readers' views, the checks."""
    sql = [*SHARED_SQL, *sql_files.names("views"), *(f"checks/{check}" for check in CHECKS)]
    return code_version.code_version([BUILDER], sql=sql, leave_out=[SERIES])


def statistic_keys(tables_key: str, baselines: Sequence[str]) -> dict[str, str]:
    """Each statistic's key (its data version), in STATISTICS' order, which puts a statistic after those it reads."""
    keys: dict[str, str] = {}
    for name in STATISTICS:
        inputs = {"tables": tables_key, **{statistic: keys[statistic] for statistic in STATISTIC_INPUTS[name]}}
        keys[name] = builds.build_key(f"statistics/{name}", statistic_code_version(name), inputs, list(baselines))
    return keys


def database_key(statistics: dict[str, str], baselines: Sequence[str]) -> str:
    return builds.build_key(layout.DATABASE_STAGE, database_code_version(), statistics, list(baselines))
