-- The $n implementations (provider and backend) with the best geometric-mean ratio to their baseline and the $n with the worst.
SELECT
    side(geomean_ratio) AS side,
    * EXCLUDE (min_ratio, max_ratio)
FROM kernel_scorecard
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
            provider ASC,
            backend ASC,
            baseline_provider ASC,
            baseline_backend ASC
    ) <= $n
ORDER BY geomean_ratio DESC
