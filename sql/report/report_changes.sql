-- The report's page of regressions and improvements: every version_changes
-- row whose verdict is not `unchanged`, newest first, in human units, with
-- the upstream commit that first carried each of the two runs.
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
    human_value(vc.previous_value, run.unit) AS previous_value,
    human_value(vc.value, run.unit) AS value,
    human_unit(run.unit) AS unit,
    vc.previous_run_id,
    vc.run_id,
    previous_seen."commit" AS previous_commit,
    seen."commit" AS "commit"
FROM version_changes AS vc
JOIN runs AS previous_run ON previous_run.run_id = vc.previous_run_id
JOIN runs AS run ON run.run_id = vc.run_id
LEFT JOIN snapshots AS previous_seen ON previous_seen.snapshot_id = previous_run.first_seen_snapshot
LEFT JOIN snapshots AS seen ON seen.snapshot_id = run.first_seen_snapshot
WHERE vc.verdict <> 'unchanged'
ORDER BY run.observed_at DESC, run.kernel, run.gpu_name, run.pass, run.metric, run.workload_slug, vc.provider
