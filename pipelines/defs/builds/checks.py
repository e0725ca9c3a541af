"""One check per stage for what Dagster cannot see: a file of a published build deleted or changed by hand."""

import dagster as dg

from pipelines.assemble.tables_build import LINKS as TABLE_LINKS
from pipelines.core import layout
from pipelines.defs.exports.assets import EXPORT as DOCUMENTS
from pipelines.defs.exports.liger_exports import BMF, LIGER_CSVS
from pipelines.defs.resources import Warehouse
from pipelines.exports.report import report_build
from pipelines.statistics import database_publish as publish
from pipelines.storage import builds

CHECK = "build_intact"
# Each stage, the asset its check is shown on, and the paths it publishes.
STAGES = (
    (layout.TABLES_STAGE, "runs", TABLE_LINKS),
    (layout.DATABASE_STAGE, "provider_comparisons", publish.LINKS),
    (DOCUMENTS.stage, "resource_documents", DOCUMENTS.links),
    (LIGER_CSVS.stage, "latest_liger_csvs", LIGER_CSVS.links),
    (BMF.stage, "bmf_exports", BMF.links),
    (layout.REPORT_STAGE, "report", report_build.LINKS),
)


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(
            CHECK,
            asset=asset,
            description=f"The published {stage} build is whole: every file its manifest lists is there with its size, and "
            "every published path links to it. A file deleted or changed by hand fails it (a warning); the next run "
            "that materializes the asset builds it again.",
        )
        for stage, asset, _ in STAGES
    ],
    can_subset=True,
)
def builds_intact(context: dg.AssetCheckExecutionContext, warehouse: Warehouse):
    for stage, asset, links in STAGES:
        if dg.AssetCheckKey(dg.AssetKey(asset), CHECK) not in context.selected_asset_check_keys:
            continue
        problem = builds.Stage(warehouse.path, stage).problem(links)
        yield dg.AssetCheckResult(
            asset_key=asset,
            check_name=CHECK,
            passed=problem is None,
            severity=dg.AssetCheckSeverity.WARN,
            description=problem or f"the published {stage} build is whole",
        )


# The checks alone, without materializing anything: what the UI's "Launchpad" or `dagster job launch` runs to ask
# whether the published warehouse is whole.
check_builds = dg.define_asset_job(
    "check_builds", selection=dg.AssetSelection.checks(builds_intact), description="Whether every published build is whole."
)
