-- One row per series (SPEC section 8: the passed runs of one group, provider
-- and backend), in the order of sql/series/series_points.sql: n_points counts
-- its runs, so the points can be cut into series by position. A value not
-- above zero (possible only for a metric of unknown direction) has no ln: it
-- is left out, here and in series_points.sql.
-- pool: the comparable series a short series' noise is pooled over (same
-- kernel, pass, metric, GPU, provider and backend, any workload); metric_pool:
-- every series of one metric and GPU, both as 64-bit hashes.
-- $lo and $hi: only the groups from $lo and before $hi (null: no bound):
-- pipelines/series/series_tables.py reads a range of groups at a time, so that
-- DuckDB sorts no more than a range's points at once.

-- Hashes, for numpy: a
-- dense_rank over the six texts took twice as long as the rest of the query
-- (at 230,000 series), and two pools would share a hash once in about 10^10
-- warehouses of a million pools (their short series would then pool together).
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
    WHERE
        status = 'passed' AND value > 0
        AND ($lo IS NULL OR group_id >= $lo) AND ($hi IS NULL OR group_id < $hi)
    GROUP BY group_id, provider, backend
)

SELECT
    group_id,
    provider,
    backend,
    unit,
    n_points,
    hash(kernel, pass, metric, gpu_name, provider, backend) AS pool,
    hash(metric, gpu_name) AS metric_pool
FROM series
ORDER BY group_id, provider, backend
