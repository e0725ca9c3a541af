-- The points of the report's sweep charts: each implementation's latest passed
-- run per comparable group (provider_comparisons), placed on its sweep's x
-- axis, in human units (ms, MiB), with the provenance of the number: the run,
-- the snapshots it was first and last seen in, and their upstream commits (all
-- from readable_runs). The implementation's backend and the baseline's come
-- from the runs themselves, so this reads the same whether or not the
-- statistics carry a backend column. Choice: the baseline's backend is that of
-- the baseline provider's latest run in the group whose value is the ratio's
-- baseline_value (the closest, should two backends' runs be there).
WITH latest AS (
    SELECT pc.group_id, pc.provider, pc.value, run.backend
    FROM provider_comparisons AS pc
    JOIN runs AS run USING (run_id)
),

baselines AS (
    SELECT
        b.group_id,
        b.baseline_provider,
        b.baseline_value,
        arg_min(latest.backend, abs(latest.value - b.baseline_value)) AS baseline_backend
    FROM (SELECT DISTINCT group_id, baseline_provider, baseline_value FROM provider_comparisons) AS b
    JOIN latest ON latest.group_id = b.group_id AND latest.provider = b.baseline_provider
    GROUP BY b.group_id, b.baseline_provider, b.baseline_value
)

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
    run.backend,
    pc.run_id,
    pc.liger_version,
    pc.observed_at,
    run.value,
    run.p20,
    run.p80,
    run.unit,
    pc.baseline_provider,
    baselines.baseline_backend,
    pc.ratio,
    pc.noise,
    run.first_seen_snapshot,
    run.first_seen_commit,
    run.last_seen_snapshot,
    run.last_seen_commit
FROM provider_comparisons AS pc
JOIN readable_runs AS run USING (run_id)
LEFT JOIN baselines
    ON baselines.group_id = pc.group_id
    AND baselines.baseline_provider = pc.baseline_provider
    AND baselines.baseline_value = pc.baseline_value
ORDER BY
    pc.kernel,
    pc.gpu_name,
    pc.pass,
    pc.metric,
    run.x_key,
    run.sweep_workload,
    pc.provider,
    run.backend,
    try_cast(run.x_value AS DOUBLE) NULLS LAST,
    run.x_value
