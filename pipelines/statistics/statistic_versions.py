"""The code version and the build key of each statistic and of warehouse.duckdb as a whole (`storage.builds`).

Both come from the stage registry (pipelines/stages.py). A statistic's code is the builder with the SQL it runs:
its own file, the macros and the intermediates its SQL reads (`lineage`). The series statistics (series_noise, change_points) are computed in Python by
`pipelines.series`, which no SQL statistic's version counts, with ruptures' version. A statistic's key adds the
tables' key, the keys of the statistics it reads and the baselines: a change to one SQL file, a comment
included (it is the statistic's description in the file), gives that statistic and those that read it a new
data version, and leaves the others' as they were.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from pipelines import stages
from pipelines.core import layout
from pipelines.statistics import lineage


@functools.cache
def statistic_code_version(name: str) -> str:
    """The statistic's code version in the stage registry (pipelines/stages.py), with the SQL of the intermediates
    its SQL reads."""
    intermediates = [f"statistics/{intermediate}" for intermediate in lineage.intermediates_read(name)]
    return stages.code_version(stages.statistic(name).name, extra_sql=intermediates)


@functools.cache
def database_code_version() -> str:
    """What the file holds beside the statistics: the tables' copies and comments, the readers' views, the checks."""
    return stages.code_version(layout.DATABASE_STAGE)


def statistic_keys(tables_key: str, baselines: Sequence[str], kept: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each statistic's key (its data version), inputs first. A statistic of `kept` (name -> the key it has in the
    published file) is copied as it is: it keeps that key, and those that read it are keyed by it."""
    kept = kept or {}
    keys: dict[str, str] = {}
    for name, reads in lineage.statistic_inputs().items():
        if name in kept:
            keys[name] = kept[name]
            continue
        inputs = {"tables": tables_key, **{statistic: keys[statistic] for statistic in reads}}
        keys[name] = stages.build_key(stages.statistic(name).name, statistic_code_version(name), inputs, list(baselines))
    return keys


def database_key(statistics: dict[str, str], baselines: Sequence[str]) -> str:
    return stages.build_key(layout.DATABASE_STAGE, database_code_version(), statistics, list(baselines))
