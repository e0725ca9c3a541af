-- The $n biggest improvements from one run to the next and the $n biggest regressions.
SELECT
    kernel, pass, metric, gpu_name, workload_slug, provider,
    previous_liger_version,
    liger_version,
    human_value(previous_value, unit) AS previous_value,
    human_value(value, unit) AS value,
    human_unit(unit) AS unit,
    ratio,
    verdict
FROM version_changes
WHERE verdict IN ('improved', 'regressed')
QUALIFY row_number() OVER (PARTITION BY verdict ORDER BY distance_from_par(ratio) DESC, run_id) <= $n
ORDER BY ratio DESC
