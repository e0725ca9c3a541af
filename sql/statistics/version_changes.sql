-- Per (group, provider, backend), each passed run against the run of the same
-- implementation before it in (observed_at, run_id) order; an implementation's
-- first run has no row. ratio = previous_value / value (above 1: the newer run
-- is better).
-- verdict: a drift inside the series' noise is `unchanged` whatever the p20-p80
-- bands say (SPEC section 8: between-run noise, not the band of one run's few
-- iterations). Inside the noise: |ln ratio| <= 2 x sqrt(2) x series_noise.noise
-- (noise is one run's sigma of ln value, a difference of two runs has sqrt(2)
-- times it, and two sigmas hold 95% of the differences unchanged code shows).
-- Outside it: improved / regressed when also separated (the two runs' [p20, p80]
-- do not overlap) and ratio > 1 / < 1; changed when separated but the metric's
-- direction is unknown; else unchanged. A series whose noise is unknown (null:
-- nothing in the warehouse has a history to learn it from) is judged by
-- separation alone, as SPEC section 6 says.
-- The rest of a run (kernel, GPU, workload, unit, observed_at) is one join on
-- run_id away. Rows are stored in no particular order.

-- Only SPEC's columns and backend are stored: storing the rest again for every
-- run would cost as much as the statistic itself.
-- A run's previous run is the passed run before it as runs is read, in rowid
-- (run_id) order, with no sort: where run ids begin with what makes the series
-- and end with the time, as upstream's and the synthetic ones do, each series
-- is one block of rows in (observed_at, run_id) order. Only a run whose row
-- before is of its series and earlier has a row, so each series has at least
-- one run without: database_build (`_create_in_stored_order`) counts the rows
-- against version_changes_rows.sql (the passed runs less one per series),
-- which they reach only when every series was one block in that order, and
-- else sorts runs so (version_changes_sorted_runs.sql) and reads that.
WITH passed_runs AS (
    SELECT
        group_id,
        provider,
        backend,
        run_id,
        liger_version,
        value,
        p20,
        p80,
        unit,
        history_key(observed_at, rowid) AS history
    FROM runs
    WHERE status = 'passed'
),

passed AS (
    SELECT
        *,
        lag({
            'group_id': group_id,
            'provider': provider,
            'backend': backend,
            'history': history,
            'run_id': run_id,
            'liger_version': liger_version,
            'value': value,
            'p20': p20,
            'p80': p80
        }) OVER () AS previous
    FROM passed_runs
),

changes AS (
    SELECT
        passed.group_id,
        passed.provider,
        passed.backend,
        passed.run_id,
        passed.previous.run_id AS previous_run_id,
        passed.liger_version,
        passed.previous.liger_version AS previous_liger_version,
        passed.value,
        passed.previous.value AS previous_value,
        improvement_ratio(passed.previous.value, passed.value, passed.unit) AS ratio,
        intervals_separated(passed.p20, passed.p80, passed.previous.p20, passed.previous.p80) AS separated,
        coalesce(
            passed.value > 0 AND passed.previous.value > 0
            AND abs(ln(passed.value / passed.previous.value)) <= 2 * sqrt(2) * series_noise.noise,
            FALSE
        ) AS within_noise
    FROM passed
    LEFT JOIN series_noise USING (group_id, provider, backend)
    -- The run before is of the same series (null keys alike, as PARTITION BY
    -- takes them) and earlier: the series goes on.
    WHERE
        passed.previous IS NOT NULL
        AND passed.previous.group_id IS NOT DISTINCT FROM passed.group_id
        AND passed.previous.provider IS NOT DISTINCT FROM passed.provider
        AND passed.previous.backend IS NOT DISTINCT FROM passed.backend
        AND passed.previous.history < passed.history
)

SELECT
    * EXCLUDE (separated, within_noise),
    CASE
        WHEN within_noise OR NOT separated THEN 'unchanged'
        WHEN ratio > 1 THEN 'improved'
        WHEN ratio < 1 THEN 'regressed'
        WHEN ratio IS NULL THEN 'changed'
        ELSE 'unchanged'
    END AS verdict
FROM changes
