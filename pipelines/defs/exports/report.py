import base64

import dagster as dg

from pipelines.defs.common import REBUILD, WRITERS
from pipelines.defs.resources import Warehouse
from pipelines.exports.report.report_build import STATISTICS, build_report_if_stale, report_code_version, report_key

OVERVIEW_ALT = "Geometric-mean ratio to the baseline per provider and GPU"


@dg.asset(
    group_name="exports",
    deps=[*STATISTICS, "runs", "snapshots"],
    kinds={"html", "svg"},
    pool=WRITERS,
    code_version=report_code_version(),
    automation_condition=REBUILD,
)
def report(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """A static site in `WAREHOUSE_DIR/report/` that opens from disk: per GPU and metric the
    scorecard as a heat map, a page per kernel with its series over upstream's benchmarked
    commits (change points marked), each implementation (provider · backend) along its sweeps
    (p20-p80 band) and its ratio to the named baseline, the change points by commit (newest first,
    regressions first, with size and cause), stale kernels flagged, and for every number its run,
    snapshot and upstream commit."""
    # Under the writer lock: another writer's sweep deletes temporary folders such as this build's.
    with warehouse.writing():
        built, summary = build_report_if_stale(warehouse.path)
        key = report_key(warehouse.path)
    state = "built" if built else "up to date (same statistics and report code)"
    context.log.info(f"report {state}: {summary.pages} pages, {summary.images} pictures in {summary.folder}")
    # A data: URI, which the UI's markdown renders in place, so the picture needs no file server.
    overview = base64.b64encode(summary.overview_image.read_bytes()).decode("ascii")
    return dg.MaterializeResult(
        metadata={
            "overview": dg.MetadataValue.md(f"![{OVERVIEW_ALT}](data:image/svg+xml;base64,{overview})"),
            "index": dg.MetadataValue.path(str(summary.index)),
            "url": dg.MetadataValue.url(summary.index.as_uri()),
            "pages": dg.MetadataValue.int(summary.pages),
            "kernel_pages": dg.MetadataValue.int(len(summary.kernel_pages)),
            "pictures": dg.MetadataValue.int(summary.images),
            "gpus": dg.MetadataValue.int(len(summary.gpus)),
            "rebuilt": dg.MetadataValue.bool(built),
        },
        data_version=dg.DataVersion(key),
    )
