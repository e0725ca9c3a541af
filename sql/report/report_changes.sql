-- The report's page of regressions and improvements: every version_changes
-- row whose verdict is not `unchanged`, newest first, in human units
-- (readable_runs), with the upstream commit that first carried each of the
-- two runs.
SELECT
    run.observed_at,
    previous_run.observed_at AS previous_observed_at,
    run.kernel,
    run.gpu_name,
    run.pass,
    run.metric,
    run.workload_slug,
    vc.provider,
    vc.verdict,
    vc.ratio,
    vc.previous_liger_version,
    vc.liger_version,
    previous_run.value AS previous_value,
    run.value,
    run.unit,
    vc.previous_run_id,
    vc.run_id,
    previous_run.first_seen_commit AS previous_commit,
    run.first_seen_commit AS "commit"
FROM version_changes AS vc
JOIN readable_runs AS previous_run ON previous_run.run_id = vc.previous_run_id
JOIN readable_runs AS run ON run.run_id = vc.run_id
WHERE vc.verdict <> 'unchanged'
ORDER BY run.observed_at DESC, run.kernel, run.gpu_name, run.pass, run.metric, run.workload_slug, vc.provider
