-- The noise of every series of the contender's kernels on its GPUs, read from
-- the statistic `series_noise` (SPEC section 8) once warehouse.duckdb has it,
-- with the same columns as series_noise.sql (its stand-in): the series of the
-- (kernel, pass, metric, gpu_name) in the registered `contender_series`.
-- A group has one kernel, pass, metric and GPU: any run of it names them.
WITH kernels AS (
    SELECT DISTINCT
        kernel,
        pass,
        metric,
        gpu_name
    FROM contender_series
),

groups AS (
    SELECT DISTINCT
        r.group_id,
        r.kernel,
        r.pass,
        r.metric,
        r.gpu_name
    FROM runs AS r
    SEMI JOIN kernels AS k
        ON r.kernel = k.kernel AND r.pass = k.pass AND r.metric = k.metric AND r.gpu_name = k.gpu_name
)

SELECT
    n.group_id,
    n.provider,
    n.backend,
    g.kernel,
    g.pass,
    g.metric,
    g.gpu_name,
    n.n_points,
    n.n_points - 1 AS n_pairs,
    n.noise,
    n.method
FROM series_noise AS n
INNER JOIN groups AS g USING (group_id)
