-- The $n biggest separated wins over the baseline and the $n biggest regressions.
SELECT
    side(ratio) AS side,
    kernel, pass, metric, gpu_name, workload_slug, provider, baseline_provider,
    human_value(value, unit) AS value,
    human_value(baseline_value, unit) AS baseline_value,
    human_unit(unit) AS unit,
    ratio
FROM provider_comparisons
WHERE separated AND ratio <> 1
QUALIFY row_number() OVER (PARTITION BY side(ratio) ORDER BY distance_from_par(ratio) DESC, run_id) <= $n
ORDER BY ratio DESC
