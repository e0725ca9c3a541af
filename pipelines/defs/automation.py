"""Declarative automation: the sensor that evaluates the assets' automation conditions (`common.REBUILD`).

Off until turned on in the UI (Automation), as Dagster's own default sensor is: once on, an asset whose code
version changed after a deploy, or whose inputs were updated by a run that did not include it, is rebuilt with
no one asking, and only that asset (its build of the same key is kept otherwise: `storage.builds`).
"""

import dagster as dg

warehouse_automation = dg.AutomationConditionSensorDefinition(
    "warehouse_automation",
    target=dg.AssetSelection.all() - dg.AssetSelection.groups("source"),
    description="Rebuild what a code change made stale or what an input's update left behind (the tables, statistics, "
    "exports and report); new upstream snapshots stay the upstream sensor's and the daily schedule's.",
    minimum_interval_seconds=60,
)
