-- The points of the report's history charts: every passed run that upstream's
-- CI benchmarked (runs.benchmarked_commit, SPEC section 7), with its group's
-- coordinates and its implementation (provider, backend), in human units
-- (readable_runs). Choices: a run carried by both streams counts here once, at
-- the benchmarked commit of the first `ci` snapshot that holds it; the x axis
-- is the CI folder (commit and release: a release rerun of a commit is a point
-- of its own), and the chart orders folders by their first run's observed_at,
-- since the order of the benchmarked commits on upstream's `main` is not in
-- the warehouse.
SELECT
    run.group_id,
    run.kernel,
    run.gpu_name,
    run.pass,
    run.metric,
    run.workload_slug,
    run.provider,
    run.backend,
    run.benchmarked_commit,
    run.release,
    run.observed_at,
    run.value,
    run.unit,
    run.run_id
FROM readable_runs AS run
WHERE run.benchmarked_commit IS NOT NULL AND run.status = 'passed'
ORDER BY run.kernel, run.gpu_name, run.pass, run.metric, run.workload_slug, run.provider, run.backend, run.observed_at, run.run_id
