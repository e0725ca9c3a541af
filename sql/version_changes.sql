-- Per (group, provider), each passed run against the provider's passed run
-- before it in (observed_at, run_id) order; a provider's first run has no row.
-- ratio = previous_value / value (above 1: the newer run is better).
-- verdict: improved / regressed when separated and ratio > 1 / < 1; changed
-- when separated but the metric's direction is unknown; else unchanged.
WITH passed AS (
    SELECT
        group_id,
        kernel,
        pass,
        metric,
        gpu_name,
        workload_slug,
        provider,
        run_id,
        liger_version,
        observed_at,
        value,
        p20,
        p80,
        unit,
        lag(run_id) OVER history AS previous_run_id,
        lag(liger_version) OVER history AS previous_liger_version,
        lag(observed_at) OVER history AS previous_observed_at,
        lag(value) OVER history AS previous_value,
        lag(p20) OVER history AS previous_p20,
        lag(p80) OVER history AS previous_p80
    FROM runs
    WHERE status = 'passed'
    WINDOW history AS (PARTITION BY group_id, provider ORDER BY observed_at, run_id)
),

changes AS (
    SELECT
        * EXCLUDE (previous_p20, previous_p80),
        improvement_ratio(previous_value, value, unit) AS ratio,
        intervals_separated(p20, p80, previous_p20, previous_p80) AS separated
    FROM passed
    WHERE previous_run_id IS NOT NULL
)

SELECT
    *,
    CASE
        WHEN separated AND ratio > 1 THEN 'improved'
        WHEN separated AND ratio < 1 THEN 'regressed'
        WHEN separated AND ratio IS NULL THEN 'changed'
        ELSE 'unchanged'
    END AS verdict
FROM changes
ORDER BY group_id, provider, observed_at, run_id
