"""Every stage of the warehouse in one list: read this first.

    raw_snapshots -> tables -> statistics/<name> (each) -> database -> report
                           \\-> resource_documents, latest_liger_csvs, bmf_exports

Each `Stage` names its inputs (other stages), the function that computes it (a dotted name, so that this module
imports nothing heavy), the SQL files it runs, the assets it outputs, an explicit format version, and the
libraries whose versions change what it writes. What is generated from it:

- each stage's code version (`code_version`): the behaviour of its entry module and all that module imports
  (comments and docstrings left out, see `core.code_version`), minus `QUIET` (modules that only log or format
  messages: a change to them changes no data), its SQL, its catalog files, its format version and its libraries'
  versions. Dagster shows it as the assets' code version; a change of it rebuilds the stage;
- each stage's build key (`build_key`): that code version with its inputs' keys and parameters, the name of its
  build folder and the data version its assets report (`storage.builds`);
- the `build_intact` checks (`defs/builds/checks.py`): one per stage that publishes paths (`published`), shown on
  `checked_on`;
- the Dagster specs' deps and code versions (`defs/`).

The edges between the statistics are not listed here: each statistic reads the tables, and the statistics its
SQL names, which `statistics/lineage.py` reads from the SQL with DuckDB's parser (`version_changes` reads
`series_noise`). Bump a stage's `format` when what it writes changes shape without its code changing (a library's
file format, say), so every warehouse builds it again.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.core import code_version as digests
from pipelines.core import layout
from pipelines.storage import builds

# Modules that only log, or word messages and errors: what they do changes no stage's data, so no code version
# counts them (nor what they import).
QUIET: tuple[str, ...] = (
    "pipelines.core.errors",
    "pipelines.core.background",
    "pipelines.core.metadata",
    "pipelines.orchestration.console",
)
CATALOGS: tuple[str, ...] = ("catalog/gpus.csv", "catalog/kernels.csv")
# Every statistic of warehouse.duckdb (as `statistics.db.STATISTICS` lists them); the series statistics come from Python.
SQL_STATISTICS: tuple[str, ...] = (
    "run_noise",
    "provider_comparisons",
    "comparable_groups",
    "kernel_scorecard",
    "sweep_comparisons",
    "version_changes",
)
SERIES_STATISTICS: tuple[str, ...] = ("series_noise", "change_points")
# The SQL a statistic runs beside its own file (`statistics.db.STORED_ORDER`: the count of its rows and the SQL it
# falls back on).
STATISTICS_MORE_SQL: dict[str, tuple[str, ...]] = {
    "version_changes": ("statistics/version_changes_rows", "statistics/version_changes_sorted_runs"),
}
# The SPEC tables (as `core.schemas.TABLES` lists them) and the statistics' checks (`statistics.db.CHECKS`): named here so
# that this module imports neither polars nor DuckDB; tests/test_stages.py holds them equal.
TABLES: tuple[str, ...] = ("runs", "measurements", "environments", "protocols", "snapshots", "run_snapshots", "quarantine")
SQL_CHECKS: tuple[str, ...] = ("group_runs_consistent", "ratios_positive_finite", "scorecard_counts_add_up", "change_points_consistent")
DATABASE_BUILDER = "pipelines.statistics.database_build"
SERIES_MODULES = "pipelines.series"


@dataclass(frozen=True)
class Stage:
    name: str  # the build folder's name under WAREHOUSE_DIR/_builds/ and the first part of its key
    inputs: tuple[str, ...]  # the stages it reads
    entry: str  # "module:function" that computes it
    outputs: tuple[str, ...]  # its Dagster assets
    sql: tuple[str, ...] = ()  # SQL files it runs, as `core.sql_files` names them
    libraries: tuple[str, ...] = ()  # whose versions change what it writes
    format: int = 1
    # Modules its code is: its entry module's closure by default; a statistic counts the builder, not the entry.
    modules: tuple[str, ...] = ()
    # Module prefixes that belong to another stage's version (the series statistics' code, for the SQL statistics).
    leave_out: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # other files it reads as code, relative to pipelines/ (the catalogs)
    # Paths it publishes (relative to the warehouse) -> paths in its build's files ("": the files folder itself).
    published: Mapping[str, str] = field(default_factory=dict)
    checked_on: str = ""  # the asset its build_intact check is shown on

    @property
    def module(self) -> str:
        return self.entry.partition(":")[0]


def _statistic(name: str) -> Stage:
    if name in SERIES_STATISTICS:
        return Stage(
            f"statistics/{name}",
            inputs=("tables",),
            entry="pipelines.series.series_tables:build",
            outputs=(name,),
            sql=(
                "macros",
                "series/candidate_group_points",
                "series/candidate_series",
                "series/candidate_series_range",
                "series/change_points",
                "series/group_points",
                "series/group_ranges",
                "series/points_in_stored_order",
                "series/series",
                "series/series_in_stored_order",
                "series/series_noise",
                "series/series_points",
                "series/series_points_of_candidates",
                "series/stored_ranges",
                # The views the series SQL reads: a point's commit and place are theirs.
                "views/commit_places",
                "views/run_points",
            ),
            libraries=("duckdb", "numpy", "pyarrow", "ruptures"),
            modules=(DATABASE_BUILDER, f"{SERIES_MODULES}.series_tables"),
        )
    return Stage(
        f"statistics/{name}",
        inputs=("tables",),
        entry=f"{DATABASE_BUILDER}:build_database",
        outputs=(name,),
        # The intermediates its SQL reads are added by `statistics.statistic_versions` (their names come from the SQL too).
        sql=("macros", f"statistics/{name}", *STATISTICS_MORE_SQL.get(name, ())),
        libraries=("duckdb",),
        modules=(DATABASE_BUILDER,),
        leave_out=(SERIES_MODULES,),
    )


STAGES: dict[str, Stage] = {
    stage.name: stage
    for stage in (
        Stage(
            "raw_snapshots",
            inputs=(),
            entry="pipelines.ingest.staging:stage_snapshot",
            outputs=("raw_snapshots",),
            libraries=("polars", "pyarrow"),
        ),
        Stage(
            layout.TABLES_STAGE,
            inputs=("raw_snapshots",),
            entry="pipelines.assemble.tables_build:build_tables",
            outputs=TABLES,
            libraries=("polars", "pyarrow"),
            files=CATALOGS,
            published={layout.table_file(name): layout.table_file(name) for name in TABLES},
            checked_on="runs",
        ),
        *(_statistic(name) for name in (*SERIES_STATISTICS, *SQL_STATISTICS)),
        Stage(
            layout.DATABASE_STAGE,
            inputs=tuple(f"statistics/{name}" for name in (*SERIES_STATISTICS, *SQL_STATISTICS)),
            entry="pipelines.statistics.database_publish:build_database_if_changed",
            outputs=(),  # the file holds the statistics, which are its assets
            # The readers' views, the checks and the tables' copies and comments, beside the statistics.
            sql=("macros", "views/commit_places", "views/readable_runs", "views/run_points", *(f"checks/{check}" for check in SQL_CHECKS)),
            libraries=("duckdb",),
            modules=(DATABASE_BUILDER,),
            leave_out=(SERIES_MODULES,),
            published={layout.DATABASE: layout.DATABASE},
            checked_on="provider_comparisons",
        ),
        Stage(
            layout.DOCUMENTS_STAGE,
            inputs=(layout.TABLES_STAGE,),
            entry="pipelines.exports.ndjson:write_ndjson",
            outputs=("resource_documents",),
            libraries=("polars", "pyarrow"),
            published={layout.export_path(name): name for name in layout.DOCUMENT_FILES},
            checked_on="resource_documents",
        ),
        Stage(
            layout.LIGER_CSV_STAGE,
            inputs=(layout.TABLES_STAGE,),
            entry="pipelines.exports.liger_csv:write_latest",
            outputs=("latest_liger_csvs",),
            libraries=("polars", "pyarrow"),
            published={layout.export_path(layout.LIGER_CSV_EXPORT): ""},
            checked_on="latest_liger_csvs",
        ),
        Stage(
            layout.BMF_STAGE,
            inputs=(layout.TABLES_STAGE,),
            entry="pipelines.exports.bmf:write_bmf",
            outputs=("bmf_exports",),
            libraries=("polars", "pyarrow"),
            published={layout.export_path(layout.BMF_EXPORT): ""},
            checked_on="bmf_exports",
        ),
        Stage(
            layout.REPORT_STAGE,
            inputs=(layout.TABLES_STAGE, layout.DATABASE_STAGE),
            entry="pipelines.exports.report.report_build:build_report_if_stale",
            outputs=("report",),
            sql=("report/report_change_points", "report/report_points", "report/report_runs", "report/report_series"),
            libraries=("duckdb", "numpy", "pyarrow"),
            published={layout.REPORT: ""},
            checked_on="report",
        ),
    )
}


def stage(name: str) -> Stage:
    try:
        return STAGES[name]
    except KeyError:
        raise KeyError(f"{name} is not a stage of pipelines/stages.py ({', '.join(STAGES)})") from None


def statistic(name: str) -> Stage:
    return stage(f"statistics/{name}")


def code_version(name: str, extra_sql: Iterable[str] = ()) -> str:
    """The stage's code version: see the module's docstring. `extra_sql`: SQL files found to be its code beside those
    listed (the intermediates a statistic's SQL reads)."""
    found = stage(name)
    package = Path(digests.PACKAGE)
    return digests.code_version(
        found.modules or [found.module],
        sql=[*found.sql, *extra_sql],
        leave_out=[*found.leave_out, *QUIET],
        libraries=found.libraries,
        files=[package / file for file in found.files],
        format_version=f"{found.name} {found.format}",
    )


def build_key(name: str, code: str, inputs: object, parameters: object = None) -> str:
    """The key of a build of stage `name` by code of version `code` (`code_version`): `storage.builds.build_key`."""
    return builds.build_key(stage(name).name, code, inputs, parameters)


def input_assets(name: str) -> tuple[str, ...]:
    """The assets of the stages `name` reads: its Dagster deps (a statistic's also has the statistics its SQL reads)."""
    return tuple(asset for source in stage(name).inputs for asset in stage(source).outputs)


@functools.cache
def published() -> tuple[Stage, ...]:
    """The stages that publish paths, each judged by a build_intact check."""
    return tuple(found for found in STAGES.values() if found.published)
