import dagster as dg

from pipelines.core import column_docs, sql_files
from pipelines.core.layout import DATABASE, Layout
from pipelines.core.metadata import format_cell, markdown_table
from pipelines.defs.common import REBUILD, WRITERS
from pipelines.defs.resources import Warehouse
from pipelines.statistics import database_publish as publish
from pipelines.statistics import db
from pipelines.statistics import statistic_versions as versions

GROUP = "statistics"
PREVIEW_ROWS = 5
CHECK_FAILURES_SHOWN = 10
PREVIEW_CELL_MAX = 200  # wide enough for a whole run id
# Whether the file found was the one its last build wrote: a warning, since the run rebuilds a damaged one.
INTACT_CHECK = "database_file_intact"
INTACT_ASSET = "provider_comparisons"


def _spec(name: str) -> dg.AssetSpec:
    return dg.AssetSpec(
        name,
        deps=[*db.TABLES, *db.STATISTIC_INPUTS[name]],
        description=sql_files.description(db.statistic_sql(name)),
        group_name=GROUP,
        kinds={"duckdb", "sql"},
        code_version=versions.statistic_code_version(name),
        automation_condition=REBUILD,
        metadata={"sql": f"sql/{db.statistic_sql(name)}.sql"},
    )


def _check_spec(check: str, table: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        check,
        asset=table,
        blocking=True,
        description=sql_files.description(f"checks/{check}")
        + f" Judged before the new {DATABASE} is published: a file that fails it is never what readers see.",
    )


@dg.multi_asset(
    name="statistics",
    specs=[_spec(name) for name in db.STATISTICS],
    check_specs=[
        *(_check_spec(check, table) for check, tables in db.CHECKS.items() for table in tables),
        dg.AssetCheckSpec(
            INTACT_CHECK,
            asset=INTACT_ASSET,
            description=f"{DATABASE} is the file its last build wrote (its sha256 is compared): a damaged one "
            "(bit rot, a copy tool, bytes changed in place) fails this check and is rebuilt from the tables in the same run.",
        ),
    ],
    pool=WRITERS,
)
def statistics(context: dg.AssetExecutionContext, warehouse: Warehouse):
    """Rebuild warehouse.duckdb from the Parquet tables and compute the comparable-group statistics.

    The file is built beside the old one and swapped in, so `python -m pipelines sql`
    keeps reading the previous statistics until the new ones are complete.
    """
    # The writer lock: the tables are read as one consistent set, never mid-publish.
    with warehouse.writing():
        try:
            build = publish.build_database_if_changed(warehouse.path, warehouse.baselines)
        except publish.DatabaseRefused as refused:
            raise dg.Failure(description=str(refused)) from None
    database = Layout(warehouse.path).database
    damaged = build.damaged
    if damaged:
        context.log.warning(f"{damaged}: rebuilt it from the tables")
    context.log.info(
        f"built {database} with baselines {warehouse.baselines}" if build.rebuilt else f"nothing changed: {database} kept as it was"
    )
    with warehouse.reading() as reader:
        results = [
            dg.MaterializeResult(
                asset_key=name,
                metadata={**_table_metadata(warehouse, reader, name, build.row_counts[name]), "rebuilt": build.rebuilt},
                # The statistic's key: a change to another statistic's SQL leaves this one's data version as it was.
                data_version=dg.DataVersion(build.statistics[name]),
            )
            for name in db.STATISTICS
        ]
    outcomes = build.checks
    yield from results
    yield dg.AssetCheckResult(
        asset_key=INTACT_ASSET,
        check_name=INTACT_CHECK,
        passed=damaged is None,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{damaged}: rebuilt from the tables" if damaged else f"{database} is the file its build wrote",
    )
    for outcome in outcomes:
        yield _check_result(outcome)


def _table_metadata(warehouse: Warehouse, reader: db.Session, name: str, row_count: int) -> dict:
    columns = reader.describe(name)
    preview = reader.preview(name, PREVIEW_ROWS)
    return {
        "dagster/row_count": row_count,
        "dagster/column_schema": dg.TableSchema(
            columns=[dg.TableColumn(column, type_, description=column_docs.column_description(name, column)) for column, type_ in columns]
        ),
        "preview": dg.MetadataValue.md(_markdown(preview.columns, preview.rows) if preview.rows else "_no rows_"),
        "database": dg.MetadataValue.path(str(Layout(warehouse.path).database)),
    }


def _markdown(columns: list[str], rows: list[tuple]) -> str:
    """Rows as the CLI writes them, each cell cut short: names from the data may be of any length."""
    return markdown_table(columns, rows, cell=lambda value: format_cell(value, null=""), width=PREVIEW_CELL_MAX)


def _check_result(outcome: db.SqlCheckResult) -> dg.AssetCheckResult:
    shown = outcome.failures[:CHECK_FAILURES_SHOWN]
    metadata: dict = {"failures": len(outcome.failures)}
    if shown:
        metadata["first_failures"] = dg.MetadataValue.md(_markdown(list(shown[0]), [tuple(row.values()) for row in shown]))
    return dg.AssetCheckResult(
        asset_key=outcome.table,
        check_name=outcome.check,
        passed=outcome.passed,
        metadata=metadata,
    )
