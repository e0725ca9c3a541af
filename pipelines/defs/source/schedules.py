import dagster as dg

# Every asset and its checks: a run ingests what is new and recomputes only what changed.
ingest_everything = dg.define_asset_job(
    "ingest_everything",
    selection=dg.AssetSelection.all(),
    description="Fetch upstream, parse the snapshots not seen before, and rebuild tables, statistics and exports.",
)

daily_ingest = dg.ScheduleDefinition(
    name="daily_ingest",
    job=ingest_everything,
    cron_schedule="0 6 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every day at 06:00 UTC, ingest whatever upstream published since the last run.",
)
