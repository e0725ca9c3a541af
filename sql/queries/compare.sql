-- One kernel on one GPU: per workload, each implementation's latest passed run
-- (provider and backend, SPEC section 4: the cuTile file's liger and the
-- Triton file's are two rows) in human units (ms, MiB: readable_runs), its
-- ratio to its baseline, named by baseline_provider and baseline_backend (as
-- provider_comparisons chose it), and whether the difference stands out of the
-- noise (provider_comparisons.noise).
-- Parameters: $kernel, $gpu, and the optional filters $pass, $metric,
-- $providers and $backends (lists; null: no filter). A provider or backend
-- filter keeps the baseline rows the chosen rows' ratios refer to, so each
-- ratio has its reference on screen.
WITH candidates AS (
    SELECT *
    FROM provider_comparisons
    WHERE
        kernel = $kernel
        AND gpu_name = $gpu
        AND ($pass IS NULL OR pass = $pass)
        AND ($metric IS NULL OR metric = $metric)
),

chosen AS (
    SELECT *
    FROM candidates
    WHERE
        ($providers IS NULL OR list_contains($providers, provider))
        AND ($backends IS NULL OR list_contains($backends, backend))
),

shown AS (
    SELECT *
    FROM chosen
    UNION
    SELECT candidates.*
    FROM candidates
    SEMI JOIN chosen
        ON
            candidates.group_id = chosen.group_id
            AND candidates.provider = chosen.baseline_provider
            AND candidates.backend = chosen.baseline_backend
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
    shown.backend,
    shown.rank,
    run.value,
    run.p20,
    run.p80,
    run.unit,
    shown.baseline_provider,
    shown.baseline_backend,
    shown.ratio,
    shown.noise,
    shown.liger_version,
    shown.observed_at
FROM shown
INNER JOIN readable_runs AS run USING (run_id)
ORDER BY
    shown.pass,
    shown.metric,
    run.x_key,
    run.sweep_workload,
    try_cast(run.x_value AS DOUBLE) NULLS LAST,
    run.x_value,
    shown.workload_slug,
    shown.rank,
    shown.provider,
    shown.backend
