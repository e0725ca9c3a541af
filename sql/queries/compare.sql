-- One kernel on one GPU: per workload, each provider's latest passed run in
-- human units (ms, MiB: readable_runs), its ratio to the group's baseline and
-- whether the difference stands out of the noise (provider_comparisons.noise).
-- Parameters: $kernel, $gpu, and the optional filters $pass, $metric and
-- $providers (a list; null: no filter). A provider filter keeps the
-- baseline's row of each workload it shows, so each ratio has its reference.
WITH candidates AS (
    SELECT *
    FROM provider_comparisons
    WHERE kernel = $kernel
        AND gpu_name = $gpu
        AND ($pass IS NULL OR pass = $pass)
        AND ($metric IS NULL OR metric = $metric)
),

chosen AS (
    SELECT *
    FROM candidates
    WHERE $providers IS NULL OR list_contains($providers, provider)
),

shown AS (
    SELECT *
    FROM chosen
    UNION
    SELECT *
    FROM candidates
    WHERE provider = baseline_provider AND group_id IN (SELECT group_id FROM chosen)
)

SELECT
    shown.pass,
    shown.metric,
    run.x_key,
    run.sweep_workload,
    shown.workload_slug,
    run.x_name,
    run.x_value,
    shown.provider,
    shown.rank,
    run.value,
    run.p20,
    run.p80,
    run.unit,
    shown.baseline_provider,
    shown.ratio,
    shown.noise,
    shown.liger_version,
    shown.observed_at
FROM shown
JOIN readable_runs AS run USING (run_id)
ORDER BY
    shown.pass,
    shown.metric,
    run.x_key,
    run.sweep_workload,
    try_cast(run.x_value AS DOUBLE) NULLS LAST,
    run.x_value,
    shown.workload_slug,
    shown.rank,
    shown.provider
