-- Every run, for the report's run tables (the targets of its links): what
-- ran, its result in human units (ms, MiB), and where the number comes from:
-- the snapshots it was first and last seen in and their upstream commits.
SELECT
    runs.run_id,
    runs.kernel,
    runs.kernel_title,
    runs.gpu_name,
    runs.pass,
    runs.metric,
    runs.provider,
    runs.workload_slug,
    runs.x_name,
    runs.x_value,
    runs.status,
    runs.liger_version,
    runs.observed_at,
    human_value(runs.value, runs.unit) AS value,
    human_value(runs.p20, runs.unit) AS p20,
    human_value(runs.p80, runs.unit) AS p80,
    human_unit(runs.unit) AS unit,
    runs.in_latest,
    runs.first_seen_snapshot,
    first_seen."commit" AS first_seen_commit,
    first_seen.subject AS first_seen_subject,
    runs.last_seen_snapshot,
    last_seen."commit" AS last_seen_commit
FROM runs
LEFT JOIN snapshots AS first_seen ON first_seen.snapshot_id = runs.first_seen_snapshot
LEFT JOIN snapshots AS last_seen ON last_seen.snapshot_id = runs.last_seen_snapshot
ORDER BY runs.kernel, runs.gpu_name, runs.pass, runs.metric, runs.provider, runs.observed_at DESC, runs.run_id
