from pathlib import Path

import dagster as dg

from pipelines.core.metadata import markdown_table
from pipelines.defs.common import WRITERS
from pipelines.defs.exports.fresh import export_if_stale
from pipelines.defs.resources import Warehouse
from pipelines.exports import bmf, liger_csv
from pipelines.exports.ndjson import EXPORTS

FILE_NAME_MAX = 255


def _exported(out: Path, counts: dict[str, int], what: str) -> dg.MaterializeResult:
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": sum(counts.values()),
            "files": dg.MetadataValue.md(markdown_table(["file", what], sorted(counts.items()), width=FILE_NAME_MAX)),
            "path": dg.MetadataValue.path(str(out)),
        }
    )


@dg.asset(
    group_name="exports",
    deps=["runs", "measurements", "run_snapshots", "snapshots", "quarantine"],
    kinds={"csv"},
    pool=WRITERS,
)
def latest_liger_csvs(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """The newest snapshot of every upstream file, rebuilt as a Liger CSV from the tables
    (same header, rows and order as upstream's file, readable by upstream's own tooling),
    in `WAREHOUSE_DIR/exports/liger_csv/<file name>`."""
    out = warehouse.path / EXPORTS / liger_csv.EXPORT_DIR
    counts = export_if_stale(
        context,
        warehouse,
        "latest_liger_csvs",
        tables=("runs", "measurements", "run_snapshots", "snapshots", "quarantine"),
        code=[liger_csv],
        out=out,
        write=lambda: liger_csv.write_latest(warehouse.path, out, warn=context.log.warning),
    )
    return _exported(out, counts, "rows")


@dg.asset(group_name="exports", deps=["runs", "measurements"], kinds={"json"}, pool=WRITERS)
def bmf_exports(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """The latest passed runs in Bencher Metric Format, one file per GPU (a Bencher testbed):
    `WAREHOUSE_DIR/exports/bmf/<gpu slug>.json`, benchmark `kernel/pass[/metric]/provider/workload`
    with measure `latency` (ns) or `peak_memory` (bytes), median with p20/p80 bounds."""
    out = warehouse.path / EXPORTS / bmf.EXPORT_DIR
    counts = export_if_stale(
        context,
        warehouse,
        "bmf_exports",
        tables=("runs", "measurements"),
        code=[bmf],
        out=out,
        write=lambda: bmf.write_bmf(warehouse.path, out),
    )
    return _exported(out, counts, "benchmarks")
