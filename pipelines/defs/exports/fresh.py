"""The exports' assets publish builds (pipelines.exports.export_builds): files rewritten only when their tables or code changed."""

from collections.abc import Callable
from pathlib import Path

import dagster as dg

from pipelines.defs.resources import Warehouse
from pipelines.exports.export_builds import Export, ExportBuild, publish_export
from pipelines.storage.builds import Build


def export_if_stale(
    context: dg.AssetExecutionContext, warehouse: Warehouse, export: Export, write: Callable[[Path, Build | None], dict[str, int]]
) -> ExportBuild:
    """The export's build, written by `write(folder, earlier)` under the writer lock unless its tables and code are as when
    it was last built and its files are all there."""
    with warehouse.writing():
        build = publish_export(warehouse.path, export, write)
    if not build.built:
        context.log.info(f"{export.stage}: tables and code unchanged since the last export, files kept as they were")
    return build
