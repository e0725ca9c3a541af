-- The $n sweeps with the best geometric-mean ratio to their baseline and the $n with the worst, each
-- implementation and its baseline named by provider and backend.
SELECT
    side(geomean_ratio) AS side,
    kernel,
    pass,
    metric,
    gpu_name,
    x_key,
    sweep_workload,
    provider,
    backend,
    baseline_provider,
    baseline_backend,
    n_points,
    n_better,
    geomean_ratio,
    sign_test_p
FROM sweep_comparisons
WHERE geomean_ratio <> 1
QUALIFY
    row_number() OVER (
        PARTITION BY side(geomean_ratio)
        ORDER BY
            distance_from_par(geomean_ratio) DESC,
            kernel ASC,
            pass ASC,
            metric ASC,
            gpu_name ASC,
            sweep_digest ASC,
            provider ASC,
            backend ASC,
            baseline_provider ASC
    ) <= $n
ORDER BY geomean_ratio DESC
