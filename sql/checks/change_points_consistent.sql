-- change_points and series_noise say what their columns promise: a change
-- point's ratio is before_value / after_value, positive and finite, its verdict
-- follows it (improved above 1, regressed below), its cause is code or host,
-- its confidence in [0, 1], its status confirmed or candidate (a candidate
-- has fewer than three runs after it, a confirmed one at least three), its
-- below_min_effect set, and it belongs to a series with a noise; every noise
-- is positive and finite, or null with method none (nothing to learn it from),
-- and at least its window spread (capped at 1.6%, noise.WINDOW_MOST) where
-- it has one. Each row is one that
-- doesn't, with the table.
SELECT
    'change_points' AS table_name,
    concat_ws(' ', cp.group_id, cp.provider, cp.backend, cp.after_run_id) AS row_key,
    cp.ratio,
    cp.verdict,
    cp.cause,
    cp.confidence
FROM change_points AS cp
LEFT JOIN series_noise AS noise USING (group_id, provider, backend)
WHERE
    NOT (cp.ratio > 0 AND isfinite(cp.ratio))
    OR abs(cp.ratio - cp.before_value / cp.after_value) > 1e-9 * cp.ratio
    OR cp.verdict IS DISTINCT FROM CASE WHEN cp.ratio > 1 THEN 'improved' ELSE 'regressed' END
    OR cp.cause NOT IN ('code', 'host')
    OR NOT (cp.confidence BETWEEN 0 AND 1)
    OR cp.status NOT IN ('confirmed', 'candidate')
    OR (cp.status = 'confirmed' AND cp.n_after < 3)
    OR cp.below_min_effect IS NULL
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
WHERE
    NOT coalesce(noise > 0 AND isfinite(noise), method = 'none')
    OR (noise IS NULL) <> (method = 'none')
    OR noise < least(window_noise, 0.0162) AND n_differences > 0
ORDER BY table_name, row_key
