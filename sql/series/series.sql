-- One row per series (SPEC section 8: the passed runs of one group, provider
-- and backend), in the order of sql/series/series_points.sql, with what the
-- series' noise is pooled over and its change points report: n_points counts
-- its runs, so the points can be cut into series by position. A value not
-- above zero (possible only for a metric of unknown direction) has no ln: it
-- is left out, here and in series_points.sql.
SELECT
    group_id,
    provider,
    backend,
    any_value(kernel) AS kernel,
    any_value(pass) AS pass,
    any_value(metric) AS metric,
    any_value(gpu_name) AS gpu_name,
    any_value(unit) AS unit,
    count(*) AS n_points
FROM runs
WHERE status = 'passed' AND value > 0
GROUP BY group_id, provider, backend
ORDER BY group_id, provider, backend
