import dagster as dg

from pipelines.core import layout
from pipelines.defs.common import REBUILD, WRITERS
from pipelines.defs.exports.fresh import export_if_stale
from pipelines.defs.resources import Warehouse
from pipelines.exports.export_builds import Export, write_resource_documents

EXPORT = Export(layout.DOCUMENTS_STAGE)

DOCUMENT_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("apiVersion", "string"),
        dg.TableColumn("kind", "string", description="BenchmarkRun, BenchmarkProtocol or ExecutionEnvironment"),
        dg.TableColumn("metadata", "object", description="name, title (and labels for runs)"),
        dg.TableColumn("spec", "object", description="the shape of shared/examples/seed-run.json"),
    ]
)


@dg.asset(
    group_name="exports",
    deps=["runs", "measurements", "protocols", "environments"],
    kinds={"json"},
    pool=WRITERS,
    code_version=EXPORT.code_version(),
    automation_condition=REBUILD,
)
def resource_documents(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """Every run, protocol and environment as a resource document (the shape of the seed example),
    one JSON object per line in `WAREHOUSE_DIR/exports/{runs,protocols,environments}.ndjson`."""
    out = layout.Layout(warehouse.path).exports
    build = export_if_stale(context, warehouse, EXPORT, lambda folder, earlier: write_resource_documents(warehouse.path, folder, earlier))
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": build.counts[layout.document_file("runs")],
            "dagster/column_schema": DOCUMENT_SCHEMA,
            "files": dg.MetadataValue.json(build.counts),
            "path": dg.MetadataValue.path(str(out)),
        },
        data_version=dg.DataVersion(build.key),
    )
