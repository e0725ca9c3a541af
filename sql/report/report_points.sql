-- The points of the report's sweep charts: each provider's latest passed run
-- per comparable group (provider_comparisons), placed on its sweep's x axis,
-- in human units (ms, MiB), with the provenance of the number: the run, the
-- snapshots it was first and last seen in, and their upstream commits.
SELECT
    pc.kernel,
    runs.kernel_title,
    pc.gpu_name,
    pc.pass,
    pc.metric,
    runs.x_key,
    runs.x_name,
    runs.x_label,
    runs.x_value,
    runs.sweep_digest,
    runs.sweep_workload,
    pc.workload_slug,
    pc.provider,
    pc.run_id,
    pc.liger_version,
    pc.observed_at,
    human_value(pc.value, pc.unit) AS value,
    human_value(pc.p20, pc.unit) AS p20,
    human_value(pc.p80, pc.unit) AS p80,
    human_unit(pc.unit) AS unit,
    pc.baseline_provider,
    pc.ratio,
    pc.noise,
    runs.first_seen_snapshot,
    first_seen."commit" AS first_seen_commit,
    runs.last_seen_snapshot,
    last_seen."commit" AS last_seen_commit
FROM provider_comparisons AS pc
JOIN runs USING (run_id)
LEFT JOIN snapshots AS first_seen ON first_seen.snapshot_id = runs.first_seen_snapshot
LEFT JOIN snapshots AS last_seen ON last_seen.snapshot_id = runs.last_seen_snapshot
ORDER BY
    pc.kernel,
    pc.gpu_name,
    pc.pass,
    pc.metric,
    runs.x_key,
    runs.sweep_workload,
    pc.provider,
    try_cast(runs.x_value AS DOUBLE) NULLS LAST,
    runs.x_value
