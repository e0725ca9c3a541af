-- The points of the report's history charts: every passed run that upstream's
-- CI benchmarked (runs.benchmarked_commit, SPEC section 7), with its group's
-- coordinates and its implementation (provider, backend), in human units
-- (readable_runs). Choices: a run carried by both streams counts here once, at
-- the benchmarked commit of the first `ci` snapshot that holds it; the x axis
-- is the CI folder (commit and release: a release rerun of a commit is a point
-- of its own), and the chart orders folders by commit_at, the commit's first
-- run anywhere in the warehouse (as sql/series/series_points.sql places it:
-- the order of the benchmarked commits on upstream's `main` is not in the
-- warehouse, and upstream's CI benchmarks main's head), then by their own
-- first run: a rerun of a commit sits beside its first run, and a folder
-- rewritten weeks later on another GPU keeps its commit's place.
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
    run.run_id,
    min(run.observed_at) OVER (PARTITION BY run.benchmarked_commit) AS commit_at
FROM readable_runs AS run
WHERE run.benchmarked_commit IS NOT NULL AND run.status = 'passed'
ORDER BY run.kernel, run.gpu_name, run.pass, run.metric, run.workload_slug, run.provider, run.backend, run.observed_at, run.run_id
