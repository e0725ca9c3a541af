-- The points of the report's sweep charts: each implementation's (provider,
-- backend: SPEC section 4) latest passed run per comparable group, placed on
-- its sweep's x axis, in human units (ms, MiB), with its ratio to the group's
-- baseline and the provenance of the number: the run, the snapshots it was
-- first and last seen in, and their upstream commits (from readable_runs).
-- Latest: the greatest observed_at, ties the greatest run_id (SPEC section 6),
-- taken here per implementation from runs, so the report tells cuTile's
-- `liger` from Triton's whether or not the statistics carry a backend yet.
-- Choices: the baseline provider is the group's (comparable_groups); when it
-- has runs on several backends in a group, the ratio is taken against its
-- latest run on the row's own backend, else on `triton`, else on the first
-- backend by name; `noise` is provider_comparisons' label when that table
-- compared this very run, else null.
WITH latest AS (
    SELECT
        group_id,
        provider,
        backend,
        arg_max(run_id, (observed_at, run_id)) AS run_id,
        arg_max(value, (observed_at, run_id)) AS canonical_value
    FROM runs
    WHERE status = 'passed'
    GROUP BY group_id, provider, backend
),

with_baseline AS (
    SELECT
        latest.*,
        g.baseline_provider,
        base.backend AS baseline_backend,
        base.canonical_value AS baseline_value,
        row_number() OVER (
            PARTITION BY latest.group_id, latest.provider, latest.backend
            ORDER BY base.backend = latest.backend DESC, base.backend = 'triton' DESC, base.backend
        ) AS choice
    FROM latest
    JOIN comparable_groups AS g USING (group_id)
    LEFT JOIN latest AS base ON base.group_id = latest.group_id AND base.provider = g.baseline_provider
)

SELECT
    run.kernel,
    run.kernel_title,
    run.gpu_name,
    run.pass,
    run.metric,
    run.x_key,
    run.x_name,
    run.x_label,
    run.x_value,
    run.sweep_digest,
    run.sweep_workload,
    run.workload_slug,
    run.provider,
    run.backend,
    run.run_id,
    run.liger_version,
    run.observed_at,
    run.value,
    run.p20,
    run.p80,
    run.unit,
    b.baseline_provider,
    b.baseline_backend,
    improvement_ratio(b.baseline_value, b.canonical_value, runs.unit) AS ratio,
    pc.noise,
    run.first_seen_snapshot,
    run.first_seen_commit,
    run.last_seen_snapshot,
    run.last_seen_commit
FROM with_baseline AS b
JOIN readable_runs AS run USING (run_id)
JOIN runs USING (run_id)
LEFT JOIN provider_comparisons AS pc USING (run_id)
WHERE b.choice = 1
ORDER BY
    run.kernel,
    run.gpu_name,
    run.pass,
    run.metric,
    run.x_key,
    run.sweep_workload,
    run.provider,
    run.backend,
    try_cast(run.x_value AS DOUBLE) NULLS LAST,
    run.x_value
