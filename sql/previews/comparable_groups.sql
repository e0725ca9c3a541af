-- The $n groups where the best implementation (provider and backend) beats the baseline by the most.
SELECT
    kernel,
    pass,
    metric,
    gpu_name,
    workload_slug,
    n_runs,
    n_implementations,
    baseline_provider,
    best_baseline_backend AS baseline_backend,
    best_provider,
    best_backend,
    human_value(best_value, unit) AS best_value,
    human_unit(unit) AS unit,
    best_ratio
FROM comparable_groups
WHERE best_ratio IS NOT NULL
ORDER BY best_ratio DESC, group_id ASC
LIMIT $n
