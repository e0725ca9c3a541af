-- The $n biggest separated wins over the baseline and the $n biggest regressions, each implementation and
-- its baseline named by provider and backend.
SELECT
    side(ratio) AS side,
    kernel,
    pass,
    metric,
    gpu_name,
    workload_slug,
    provider,
    backend,
    baseline_provider,
    baseline_backend,
    human_value(value, unit) AS value,
    human_value(baseline_value, unit) AS baseline_value,
    human_unit(unit) AS unit,
    ratio
FROM provider_comparisons
WHERE separated AND ratio <> 1
QUALIFY row_number() OVER (PARTITION BY side(ratio) ORDER BY distance_from_par(ratio) DESC, run_id ASC) <= $n
ORDER BY ratio DESC
