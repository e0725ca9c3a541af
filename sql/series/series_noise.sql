-- series_noise (SPEC section 8): one row per series, the noise of its runs
-- (sigma of ln value between runs of unchanged code), how it was found
-- (method: from the series' own differences, raised by its pool's reruns, or
-- pooled from comparable series when it is too short) and the window spread.
-- pipelines/series/noise.py says what each estimate is.

-- pipelines/series/series_tables.py streams the series (series.sql, series_points.sql)
-- a batch at a time into series_parts (each series' own estimate, from its
-- points alone) and series_reruns (every rerun difference, with its pool);
-- what needs every series of a pool is finished here. A median is the mean of
-- the two middle values (one value twice for an odd count), as noise.py's
-- group_medians computes it, so that each noise is the same to the last bit;
-- the constants are noise.py's, set as variables by tables.py.
WITH rerun_ranks AS (
    SELECT
        pool,
        size,
        row_number() OVER (PARTITION BY pool ORDER BY size) - 1 AS place,
        count(*) OVER (PARTITION BY pool) AS n
    FROM series_reruns
),

rerun_pools AS (
    SELECT
        pool,
        greatest(
            (min(size) FILTER (WHERE place = (n - 1) // 2) + min(size) FILTER (WHERE place = n // 2)) / 2
            * getvariable('mad_to_run_sigma'),
            getvariable('noise_floor')
        ) AS noise
    FROM rerun_ranks
    GROUP BY pool
    HAVING count(*) >= getvariable('min_differences')
),

raised AS (
    SELECT
        parts.*,
        coalesce(parts.own AND rerun_pools.noise > parts.noise, FALSE) AS is_raised,
        CASE WHEN parts.own AND rerun_pools.noise > parts.noise THEN rerun_pools.noise ELSE parts.noise END AS own_noise
    FROM series_parts AS parts
    LEFT JOIN rerun_pools USING (pool)
),

own_ranks AS (
    SELECT
        pool,
        metric_pool,
        own_noise,
        row_number() OVER (PARTITION BY pool ORDER BY own_noise) - 1 AS pool_place,
        count(*) OVER (PARTITION BY pool) AS pool_n,
        row_number() OVER (PARTITION BY metric_pool ORDER BY own_noise) - 1 AS metric_place,
        count(*) OVER (PARTITION BY metric_pool) AS metric_n
    FROM raised
    WHERE own
),

pool_medians AS (
    SELECT
        pool,
        (
            min(own_noise) FILTER (WHERE pool_place = (pool_n - 1) // 2)
            + min(own_noise) FILTER (WHERE pool_place = pool_n // 2)
        ) / 2 AS noise
    FROM own_ranks
    GROUP BY pool
),

metric_medians AS (
    SELECT
        metric_pool,
        (
            min(own_noise) FILTER (WHERE metric_place = (metric_n - 1) // 2)
            + min(own_noise) FILTER (WHERE metric_place = metric_n // 2)
        ) / 2 AS noise
    FROM own_ranks
    GROUP BY metric_pool
)

SELECT
    raised.group_id,
    raised.provider,
    raised.backend,
    raised.n_points,
    CASE WHEN raised.own THEN raised.own_noise ELSE coalesce(pool_medians.noise, metric_medians.noise) END AS noise,
    CASE
        WHEN raised.is_raised THEN 'reruns-pooled'
        WHEN raised.own THEN raised.method
        WHEN pool_medians.noise IS NOT NULL THEN 'pooled'
        WHEN metric_medians.noise IS NOT NULL THEN 'pooled-metric'
        ELSE 'none'
    END AS method,
    raised.n_differences,
    raised.window_noise
FROM raised
LEFT JOIN pool_medians USING (pool)
LEFT JOIN metric_medians USING (metric_pool)
