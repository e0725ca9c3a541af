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
WITH sweep_points AS (
    SELECT
        run_id,
        x_key,
        x_value,
        sweep_digest,
        sweep_workload
    FROM runs
    WHERE rowid IN (SELECT latest_row FROM latest_runs) AND sweep_digest IS NOT NULL
),

points AS (
    SELECT
        provider_comparisons.*,
        sweep_points.* EXCLUDE (run_id)
    FROM provider_comparisons
    INNER JOIN sweep_points USING (run_id)
    WHERE
        (
            provider_comparisons.provider <> provider_comparisons.baseline_provider
            OR provider_comparisons.backend <> provider_comparisons.baseline_backend
        )
        AND provider_comparisons.ratio IS NOT NULL
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
