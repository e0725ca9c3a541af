"""Exports written only when their tables or code changed (see pipelines.storage.freshness)."""

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import dagster as dg

from pipelines.defs.resources import Warehouse
from pipelines.exports.ndjson import EXPORTS
from pipelines.storage import freshness

STAMPS = "_stamps"


def export_if_stale(
    context: dg.AssetExecutionContext,
    warehouse: Warehouse,
    name: str,
    tables: tuple[str, ...],
    code: list[ModuleType],
    out: Path,
    write: Callable[[], dict[str, int]],
) -> dict[str, int]:
    """Files written -> count, from `write()` under the writer lock, or as recorded when the
    export's tables and code are the same as when it was last written and its files are all there."""
    with warehouse.writing():
        key = freshness.fingerprint([warehouse.path / f"{t}.parquet" for t in tables], code)
        built, counts = freshness.rebuild_if_stale(
            warehouse.path / EXPORTS / STAMPS / f"{name}.json", key, lambda recorded: [out / f for f in recorded or {}], write
        )
    if not built:
        context.log.info(f"{name}: tables and code unchanged since the last export, files kept as they were")
    return counts
