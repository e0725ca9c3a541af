"""Small Dagster helpers shared by the domains."""

from __future__ import annotations

import time
from collections.abc import Callable

import dagster as dg
import polars as pl

from pipelines.assemble.checks import CheckOutcome
from pipelines.core import column_docs, display
from pipelines.core.metadata import bounded_json, column_types, markdown_preview

# The Dagster concurrency pool of every asset that writes the warehouse (its limit, 1, is in dagster.yaml):
# writers wait for one another there, where the UI shows who waits for whom.
WRITERS = "warehouse_writers"

# What Dagster rebuilds by itself once the `warehouse_automation` sensor is on (defs/automation.py): an asset whose
# code version changed, or one an input of which was updated or which is missing, once no input is missing or
# running. Upstream's git history Dagster cannot see: new snapshots stay the upstream sensor's and the schedule's.
CODE_CHANGED = (
    dg.AutomationCondition.code_version_changed().since_last_handled()
    & ~dg.AutomationCondition.any_deps_missing()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("code version changed")
REBUILD = (dg.AutomationCondition.eager() | CODE_CHANGED).with_label("eager, or its code changed")


def at_most_every(seconds: float, log: Callable[[str], None]) -> Callable[[str], None]:
    """`log`, passing on at most one message per `seconds`: the instance stores every log line
    as an event, which costs more than staging a small snapshot."""
    last = -seconds

    def maybe(message: str) -> None:
        nonlocal last
        if time.monotonic() - last >= seconds:
            last = time.monotonic()
            log(message)

    return maybe


def table_schema(schema: pl.Schema, table: str = "") -> dg.TableSchema:
    """The column schema the UI shows, each column with its description (`column_docs`) where it has one."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(name, dtype, description=column_docs.column_description(table, name)) for name, dtype in column_types(schema)
        ]
    )


def table_metadata(
    row_count: int, head: pl.DataFrame, schema: pl.Schema, preview_columns: list[str] | None = None, table: str = ""
) -> dict:
    """Metadata of a table from its row count and its first rows (never the whole table)."""
    return {
        "dagster/row_count": dg.MetadataValue.int(row_count),
        "dagster/column_schema": table_schema(schema, table),
        "preview": dg.MetadataValue.md(markdown_preview(head, preview_columns)),
    }


def check_result(outcome: CheckOutcome, asset_key: str, check_name: str, severity=dg.AssetCheckSeverity.ERROR) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=check_name,
        passed=outcome.passed,
        severity=severity,
        # Both name values from the data (run ids, GPU and kernel names): bounded, as every metadata is.
        description=display.shorten(outcome.description),
        metadata={k: dg.MetadataValue.json(bounded_json(v)) for k, v in outcome.details.items()},
    )
