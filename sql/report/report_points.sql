-- The points of the report's sweep charts: each implementation's (provider,
-- backend: SPEC section 4) latest passed run per comparable group
-- (provider_comparisons), placed on its sweep's x axis, in human units (ms,
-- MiB), with its ratio to the baseline implementation it was compared with
-- (baseline_provider, baseline_backend) and the provenance of the number: the
-- run, the snapshots it was first and last seen in, and their upstream commits
-- (all from readable_runs).
SELECT
    pc.kernel,
    run.kernel_title,
    pc.gpu_name,
    pc.pass,
    pc.metric,
    run.x_key,
    run.x_name,
    run.x_label,
    run.x_value,
    run.sweep_digest,
    run.sweep_workload,
    pc.workload_slug,
    pc.provider,
    pc.backend,
    pc.run_id,
    pc.liger_version,
    pc.observed_at,
    run.value,
    run.p20,
    run.p80,
    run.unit,
    pc.baseline_provider,
    pc.baseline_backend,
    pc.ratio,
    pc.noise,
    run.first_seen_snapshot,
    run.first_seen_commit,
    run.last_seen_snapshot,
    run.last_seen_commit
FROM provider_comparisons AS pc
INNER JOIN readable_runs AS run USING (run_id)
ORDER BY
    pc.kernel,
    pc.gpu_name,
    pc.pass,
    pc.metric,
    run.x_key,
    run.sweep_workload,
    pc.provider,
    pc.backend,
    try_cast(run.x_value AS DOUBLE) NULLS LAST,
    run.x_value
