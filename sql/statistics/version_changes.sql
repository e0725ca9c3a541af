-- Per (group, provider), each passed run against the provider's passed run
-- before it in (observed_at, run_id) order; a provider's first run has no row.
-- ratio = previous_value / value (above 1: the newer run is better).
-- verdict: improved / regressed when separated and ratio > 1 / < 1; changed
-- when separated but the metric's direction is unknown; else unchanged.
-- Only SPEC's columns are stored: the rest of a run (kernel, GPU, workload,
-- unit, observed_at) is one join on run_id away, and storing it again for
-- every run would cost as much as the statistic itself.
-- Rows are stored in no particular order.
WITH passed AS (
    SELECT
        group_id,
        provider,
        run_id,
        liger_version,
        value,
        p20,
        p80,
        unit,
        lag({'run_id': run_id, 'liger_version': liger_version, 'value': value, 'p20': p20, 'p80': p80})
            OVER (PARTITION BY group_id, provider ORDER BY history_key(observed_at, rowid)) AS previous
    FROM runs
    WHERE status = 'passed'
),

changes AS (
    SELECT
        group_id,
        provider,
        run_id,
        previous.run_id AS previous_run_id,
        liger_version,
        previous.liger_version AS previous_liger_version,
        value,
        previous.value AS previous_value,
        improvement_ratio(previous.value, value, unit) AS ratio,
        intervals_separated(p20, p80, previous.p20, previous.p80) AS separated
    FROM passed
    WHERE previous IS NOT NULL
)

SELECT
    * EXCLUDE (separated),
    CASE
        WHEN separated AND ratio > 1 THEN 'improved'
        WHEN separated AND ratio < 1 THEN 'regressed'
        WHEN separated AND ratio IS NULL THEN 'changed'
        ELSE 'unchanged'
    END AS verdict
FROM changes
