-- Every run, for the report's run tables (the targets of its links): what
-- ran, its result in human units (ms, MiB), and where the number comes from:
-- the snapshots it was first and last seen in and their upstream commits
-- (readable_runs), its backend, stream and the CI folder (benchmarked commit
-- and release) that carried it.
SELECT
    run.run_id,
    run.kernel,
    run.kernel_title,
    run.gpu_name,
    run.pass,
    run.metric,
    run.provider,
    run.backend,
    run.stream,
    run.benchmarked_commit,
    run.release,
    run.workload_slug,
    run.x_name,
    run.x_value,
    run.status,
    run.liger_version,
    run.observed_at,
    run.value,
    run.p20,
    run.p80,
    run.unit,
    run.in_latest,
    run.first_seen_snapshot,
    run.first_seen_commit,
    run.first_seen_subject,
    run.last_seen_snapshot,
    run.last_seen_commit
FROM readable_runs AS run
ORDER BY
    run.kernel ASC,
    run.gpu_name ASC,
    run.pass ASC,
    run.metric ASC,
    run.provider ASC,
    run.backend ASC,
    run.observed_at DESC,
    run.run_id ASC
