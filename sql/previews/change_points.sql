-- The $n biggest improvements and the $n biggest regressions among the persistent shifts of a series.
WITH farthest AS (
    SELECT *
    FROM change_points
    QUALIFY row_number() OVER (PARTITION BY verdict ORDER BY distance_from_par(ratio) DESC, after_run_id ASC) <= $n
)

SELECT
    kernel,
    pass,
    metric,
    gpu_name,
    workload_slug,
    provider,
    backend,
    before_commit,
    after_commit,
    human_value(before_value, unit) AS before_value,
    human_value(after_value, unit) AS after_value,
    human_unit(unit) AS unit,
    ratio,
    verdict,
    cause,
    confidence,
    status,
    below_min_effect
FROM farthest
ORDER BY ratio DESC, after_run_id ASC
