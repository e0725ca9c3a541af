-- change_points and series_noise say what their columns promise: a change
-- point's ratio is before_value / after_value, positive and finite, its verdict
-- follows it (improved above 1, regressed below), its cause is code or host,
-- its confidence in [0, 1], and it belongs to a series with a noise; every
-- noise is positive and finite, or null with method none (nothing to learn it
-- from). Each row is one that doesn't, with the table.
SELECT
    'change_points' AS table_name,
    concat_ws(' ', point.group_id, point.provider, point.backend, point.after_run_id) AS row_key,
    point.ratio,
    point.verdict,
    point.cause,
    point.confidence
FROM change_points AS point
LEFT JOIN series_noise AS noise USING (group_id, provider, backend)
WHERE NOT (point.ratio > 0 AND isfinite(point.ratio))
    OR abs(point.ratio - point.before_value / point.after_value) > 1e-9 * point.ratio
    OR point.verdict IS DISTINCT FROM CASE WHEN point.ratio > 1 THEN 'improved' ELSE 'regressed' END
    OR point.cause NOT IN ('code', 'host')
    OR NOT (point.confidence BETWEEN 0 AND 1)
    OR noise.noise IS NULL
UNION ALL
SELECT
    'series_noise',
    concat_ws(' ', group_id, provider, backend),
    noise,
    method,
    NULL,
    NULL
FROM series_noise
WHERE NOT coalesce(noise > 0 AND isfinite(noise), method = 'none')
    OR (noise IS NULL) <> (method = 'none')
ORDER BY table_name, row_key
