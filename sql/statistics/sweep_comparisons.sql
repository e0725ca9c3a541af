-- Per sweep (kernel, pass, metric, GPU, x axis and every other workload
-- parameter: runs.x_key and runs.sweep_digest) and implementation (provider
-- and backend, SPEC section 4) against its baseline implementation (provider
-- and backend, as provider_comparisons chose it): the points of
-- provider_comparisons (latest runs) paired by x value. The cuTile file's
-- liger and the Triton file's liger are two sweeps.
-- A point whose baseline is another provider (huggingface missing there, so
-- torch) or another backend counts in that baseline's row; points where the
-- implementation is its own baseline or has no baseline are left out.
-- n_better / n_worse / n_ties: ratio > 1 / < 1 / = 1 at a point.
-- sign_test_p: exact two-sided sign test over the points that are not ties
-- (8 better of 8 gives 0.0078125); null when every point ties.
-- x_values and ratios list the points in x order (numeric where x is).
-- Each compared implementation's latest run is found by its rowid (latest_runs),
-- and only those rows of runs are read: joined on run_id instead, DuckDB
-- hashed every run's id (10M runs: 4-6 s and 0.9 GB spilled, against 1.3 s).
WITH compared AS (
    SELECT
        provider_comparisons.*,
        latest_runs.latest_row
    FROM provider_comparisons
    -- Null keys alike, as latest_runs' GROUP BY takes them.
    INNER JOIN latest_runs
        ON
            provider_comparisons.group_id IS NOT DISTINCT FROM latest_runs.group_id
            AND provider_comparisons.provider IS NOT DISTINCT FROM latest_runs.provider
            AND provider_comparisons.backend IS NOT DISTINCT FROM latest_runs.backend
    WHERE
        (
            provider_comparisons.provider <> provider_comparisons.baseline_provider
            OR provider_comparisons.backend <> provider_comparisons.baseline_backend
        )
        AND provider_comparisons.ratio IS NOT NULL
),

sweep_points AS (
    SELECT
        rowid AS latest_row,
        x_key,
        x_value,
        sweep_digest,
        sweep_workload
    FROM runs
    WHERE rowid IN (SELECT latest_row FROM compared) AND sweep_digest IS NOT NULL
),

points AS (
    SELECT
        compared.* EXCLUDE (latest_row),
        sweep_points.* EXCLUDE (latest_row)
    FROM compared
    INNER JOIN sweep_points USING (latest_row)
),

sweeps AS (
    SELECT
        kernel,
        pass,
        metric,
        gpu_name,
        x_key,
        sweep_digest,
        any_value(sweep_workload) AS sweep_workload,
        provider,
        backend,
        baseline_provider,
        baseline_backend,
        count(*) AS n_points,
        count(*) FILTER (WHERE ratio > 1) AS n_better,
        count(*) FILTER (WHERE ratio < 1) AS n_worse,
        count(*) FILTER (WHERE ratio = 1) AS n_ties,
        ordered_geomean(ratio) AS geomean_ratio,
        min(ratio) AS min_ratio,
        max(ratio) AS max_ratio,
        -- One ordered list, split below: each ordered aggregate sorts its input again.
        list({'x_value': x_value, 'ratio': ratio} ORDER BY try_cast(x_value AS DOUBLE) NULLS LAST, x_value) AS points
    FROM points
    GROUP BY kernel, pass, metric, gpu_name, x_key, sweep_digest, provider, backend, baseline_provider, baseline_backend
)

SELECT
    * EXCLUDE (points),
    sign_test_p(n_better, n_worse) AS sign_test_p,
    list_transform(points, LAMBDA point: point.x_value) AS x_values,
    list_transform(points, LAMBDA point: point.ratio) AS ratios
FROM sweeps
ORDER BY kernel, pass, metric, gpu_name, x_key, sweep_workload, provider, backend, baseline_provider, baseline_backend
