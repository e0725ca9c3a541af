-- version_changes (see version_changes.sql) by a window that sorts each
-- series' runs: what database_build makes them by when runs, read in rowid
-- order, does not hold each series as one block in (observed_at, run_id)
-- order. The same rows as version_changes.sql gives where it does.

-- Only SPEC's columns and backend are stored: storing the rest again for every
-- run would cost as much as the statistic itself.
WITH passed AS (
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
        lag({'run_id': run_id, 'liger_version': liger_version, 'value': value, 'p20': p20, 'p80': p80})
            OVER (PARTITION BY group_id, provider, backend ORDER BY history_key(observed_at, rowid)) AS previous
    FROM runs
    WHERE
        status = 'passed'
        -- $lo and $hi: the groups from $lo and before $hi (null: no bound), as
        -- the series SQL takes them: the build makes this one range at a time,
        -- so the window sorts a range's runs within DuckDB's memory (10M runs
        -- in one window spilled: 43 s, by ranges 28 s).
        AND ($lo IS NULL OR group_id >= $lo) AND ($hi IS NULL OR group_id < $hi)
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
    WHERE passed.previous IS NOT NULL
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
