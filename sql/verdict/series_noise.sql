-- The noise of every series of the contender's kernels on its GPUs, estimated
-- here until `series_noise` (SPEC section 8) is in warehouse.duckdb: series
-- of the (kernel, pass, metric, gpu_name) in the registered `contender_series`,
-- so a short series can borrow its kernel's typical noise (pipelines/verdict/noise.py).
-- noise is the standard deviation of ln(value) of one run, from two robust
-- spreads of the series' passed runs (observed_at order, ties by run_id):
-- - `consecutive`: 1.4826 * median |ln v_i - ln v_(i-1)| / sqrt(2): the MAD of
--   the differences of consecutive runs, as a normal sigma of one run (a
--   difference of two runs has sqrt(2) times its spread); a step in the series
--   moves one difference only, so a code change barely moves it;
-- - `reruns`: the same over every pair of runs of one benchmarked commit (the
--   CI stream's reruns), the direct evidence of how far a run moves when the
--   code does not.
-- The noise is the greater of the two (reruns show spread a code change cannot
-- explain), `method` says which; n_points is the series' passed runs, n_pairs the
-- differences behind the estimate. Fewer than $min_pairs differences: null.
-- The contender's own runs (`contender_runs`) are left out, as in baselines.sql.
WITH kernels AS (
    SELECT DISTINCT
        kernel,
        pass,
        metric,
        gpu_name
    FROM contender_series
),

points AS (
    SELECT
        r.group_id,
        r.provider,
        r.backend,
        r.kernel,
        r.pass,
        r.metric,
        r.gpu_name,
        r.benchmarked_commit,
        r.run_id,
        ln(r.value) AS log_value,
        ln(r.value) - lag(ln(r.value)) OVER (
            PARTITION BY r.group_id, r.provider, r.backend ORDER BY r.observed_at, r.run_id
        ) AS step
    FROM runs AS r
    SEMI JOIN kernels AS k
        ON r.kernel = k.kernel AND r.pass = k.pass AND r.metric = k.metric AND r.gpu_name = k.gpu_name
    WHERE
        r.status = 'passed'
        AND r.value > 0
        AND r.run_id NOT IN (SELECT run_id FROM contender_runs)
),

consecutive AS (
    SELECT
        group_id,
        provider,
        backend,
        any_value(kernel) AS kernel,
        any_value(pass) AS pass,
        any_value(metric) AS metric,
        any_value(gpu_name) AS gpu_name,
        count(*) AS n_points,
        count(step) AS n_steps,
        1.4826 * median(abs(step)) / sqrt(2) AS noise
    FROM points
    GROUP BY group_id, provider, backend
),

rerun_pairs AS (
    SELECT
        a.group_id,
        a.provider,
        a.backend,
        abs(a.log_value - b.log_value) AS difference
    FROM points AS a
    INNER JOIN points AS b
        ON
            a.group_id = b.group_id
            AND a.provider = b.provider
            AND a.backend = b.backend
            AND a.benchmarked_commit = b.benchmarked_commit
            AND a.run_id < b.run_id
),

reruns AS (
    SELECT
        group_id,
        provider,
        backend,
        count(*) AS n_pairs,
        1.4826 * median(difference) / sqrt(2) AS noise
    FROM rerun_pairs
    GROUP BY group_id, provider, backend
)

SELECT
    s.group_id,
    s.provider,
    s.backend,
    s.kernel,
    s.pass,
    s.metric,
    s.gpu_name,
    s.n_points,
    s.n_steps + coalesce(r.n_pairs, 0) AS n_pairs,
    CASE WHEN s.n_steps + coalesce(r.n_pairs, 0) >= $min_pairs THEN greatest(s.noise, r.noise) END AS noise,
    CASE
        WHEN s.n_steps + coalesce(r.n_pairs, 0) < $min_pairs THEN NULL
        WHEN r.noise > s.noise THEN 'reruns'
        ELSE 'consecutive'
    END AS method
FROM consecutive AS s
LEFT JOIN reruns AS r USING (group_id, provider, backend)
