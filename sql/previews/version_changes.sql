-- The $n biggest improvements from one run to the next and the $n biggest regressions.
WITH farthest AS (
    SELECT *
    FROM version_changes
    WHERE verdict IN ('improved', 'regressed')
    QUALIFY row_number() OVER (PARTITION BY verdict ORDER BY distance_from_par(ratio) DESC, run_id ASC) <= $n
)

SELECT
    run.kernel,
    run.pass,
    run.metric,
    run.gpu_name,
    run.workload_slug,
    farthest.provider,
    farthest.backend,
    farthest.previous_liger_version,
    farthest.liger_version,
    human_value(farthest.previous_value, run.unit) AS previous_value,
    human_value(farthest.value, run.unit) AS value,
    human_unit(run.unit) AS unit,
    farthest.ratio,
    farthest.verdict
FROM farthest
INNER JOIN runs AS run USING (run_id)
ORDER BY farthest.ratio DESC, farthest.run_id ASC
