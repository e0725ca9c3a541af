-- One row per series (SPEC section 8: the passed runs of one group, provider
-- and backend), in the order of sql/series/series_points.sql: n_points counts
-- its runs, so the points can be cut into series by position. A value not
-- above zero (possible only for a metric of unknown direction) has no ln: it
-- is left out, here and in series_points.sql.
-- pool: the comparable series a short series' noise is pooled over (same
-- kernel, pass, metric, GPU, provider and backend, any workload); metric_pool:
-- every series of one metric and GPU. Both as numbers, for numpy.
WITH series AS (
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
)

SELECT
    group_id,
    provider,
    backend,
    unit,
    n_points,
    dense_rank() OVER (ORDER BY kernel, pass, metric, gpu_name, provider, backend) - 1 AS pool,
    dense_rank() OVER (ORDER BY metric, gpu_name) - 1 AS metric_pool
FROM series
ORDER BY group_id, provider, backend
