from pathlib import Path

import dagster as dg

from pipelines.core import layout
from pipelines.core.metadata import markdown_table
from pipelines.defs.common import REBUILD, WRITERS
from pipelines.defs.exports.fresh import export_if_stale
from pipelines.defs.resources import Warehouse
from pipelines.exports import bmf
from pipelines.exports.export_builds import Export, ExportBuild, write_liger_csvs

FILE_NAME_MAX = 255
LIGER_CSVS = Export(layout.LIGER_CSV_STAGE)
BMF = Export(layout.BMF_STAGE)


def _exported(out: Path, build: ExportBuild, what: str) -> dg.MaterializeResult:
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": sum(build.counts.values()),
            "files": dg.MetadataValue.md(markdown_table(["file", what], sorted(build.counts.items()), width=FILE_NAME_MAX)),
            "path": dg.MetadataValue.path(str(out)),
        },
        data_version=dg.DataVersion(build.key),
    )


@dg.asset(
    group_name="exports",
    deps=["runs", "measurements", "run_snapshots", "snapshots", "quarantine"],
    kinds={"csv"},
    pool=WRITERS,
    code_version=LIGER_CSVS.code_version(),
    automation_condition=REBUILD,
)
def latest_liger_csvs(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """The newest snapshot of every upstream file, rebuilt as a Liger CSV from the tables
    (same header, rows and order as upstream's file, readable by upstream's own tooling),
    in `WAREHOUSE_DIR/exports/liger_csv/<file name>`."""
    out = layout.Layout(warehouse.path).export(layout.LIGER_CSV_EXPORT)
    build = export_if_stale(
        context, warehouse, LIGER_CSVS, lambda folder, earlier: write_liger_csvs(warehouse.path, folder, earlier, context.log.warning)
    )
    return _exported(out, build, "rows")


@dg.asset(
    group_name="exports",
    deps=["runs", "measurements"],
    kinds={"json"},
    pool=WRITERS,
    code_version=BMF.code_version(),
    automation_condition=REBUILD,
)
def bmf_exports(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """The latest passed runs in Bencher Metric Format, one file per GPU (a Bencher testbed):
    `WAREHOUSE_DIR/exports/bmf/<gpu slug>.json`, benchmark `kernel/pass[/metric]/provider/workload`
    with measure `latency` (ns) or `peak_memory` (bytes), median with p20/p80 bounds."""
    out = layout.Layout(warehouse.path).export(layout.BMF_EXPORT)
    build = export_if_stale(context, warehouse, BMF, lambda folder, _: bmf.write_bmf(warehouse.path, folder))
    return _exported(out, build, "benchmarks")
