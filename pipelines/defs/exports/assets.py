import dagster as dg

from pipelines.defs.resources import Warehouse
from pipelines.lib import store
from pipelines.lib.resources_export import write_ndjson


DOCUMENT_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("apiVersion", "string"),
        dg.TableColumn("kind", "string", description="BenchmarkRun, BenchmarkProtocol or ExecutionEnvironment"),
        dg.TableColumn("metadata", "object", description="name, title (and labels for runs)"),
        dg.TableColumn("spec", "object", description="the shape of shared/examples/seed-run.json"),
    ]
)


@dg.asset(group_name="exports", deps=["runs", "measurements", "protocols", "environments"], kinds={"json"})
def resource_documents(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """Every run, protocol and environment as a resource document (the shape of the seed example),
    one JSON object per line in `WAREHOUSE_DIR/exports/{runs,protocols,environments}.ndjson`."""
    with store.writer_lock(warehouse.path):
        counts = write_ndjson(warehouse.path)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": counts["runs.ndjson"],
            "dagster/column_schema": DOCUMENT_SCHEMA,
            "files": dg.MetadataValue.json(counts),
            "path": dg.MetadataValue.path(str(warehouse.path / "exports")),
        }
    )
