-- Every run, for the report's run tables (the targets of its links): what
-- ran, its result in human units (ms, MiB), and where the number comes from:
-- the snapshots it was first and last seen in and their upstream commits
-- (readable_runs).
SELECT
    run_id,
    kernel,
    kernel_title,
    gpu_name,
    pass,
    metric,
    provider,
    workload_slug,
    x_name,
    x_value,
    status,
    liger_version,
    observed_at,
    value,
    p20,
    p80,
    unit,
    in_latest,
    first_seen_snapshot,
    first_seen_commit,
    first_seen_subject,
    last_seen_snapshot,
    last_seen_commit
FROM readable_runs
ORDER BY kernel, gpu_name, pass, metric, provider, observed_at DESC, run_id
