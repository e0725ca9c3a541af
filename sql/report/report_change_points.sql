-- The change points the report lists and marks (change_points, SPEC section 8),
-- read only when warehouse.duckdb has that table. Values in human units (the
-- unit of the run after the shift, which the series shares); the CI folder
-- (commit and release) and time of the runs either side, so a point can be
-- placed on its history chart and its commit dated; and the group's baseline
-- (comparable_groups.baseline_provider, with the backends its runs in the group
-- were written for, from runs), which `cause = 'host'` says moved alike;
-- status (confirmed, or candidate: too new to be sure) and below_min_effect
-- (a step under 5%: listed, not drawn as a change).
WITH baseline_backends AS (
    SELECT
        runs.group_id,
        string_agg(DISTINCT runs.backend, ', ' ORDER BY runs.backend) AS baseline_backend
    FROM runs
    INNER JOIN comparable_groups AS g ON runs.group_id = g.group_id AND runs.provider = g.baseline_provider
    WHERE runs.status = 'passed'
    GROUP BY runs.group_id
)

SELECT
    cp.group_id,
    cp.kernel,
    cp.gpu_name,
    cp.pass,
    cp.metric,
    cp.workload_slug,
    cp.provider,
    cp.backend,
    cp.verdict,
    cp.cause,
    cp.ratio,
    cp.confidence,
    cp.status,
    cp.below_min_effect,
    human_value(cp.before_value, after_run.unit) AS before_value,
    human_value(cp.after_value, after_run.unit) AS after_value,
    human_unit(after_run.unit) AS unit,
    cp.before_commit,
    cp.after_commit,
    before_run.release AS before_release,
    after_run.release AS after_release,
    before_run.benchmarked_commit AS before_benchmarked_commit,
    after_run.benchmarked_commit AS after_benchmarked_commit,
    before_run.observed_at AS before_observed_at,
    cp.observed_at,
    cp.before_run_id,
    cp.after_run_id,
    g.baseline_provider,
    bb.baseline_backend
FROM change_points AS cp
LEFT JOIN runs AS after_run ON cp.after_run_id = after_run.run_id
LEFT JOIN runs AS before_run ON cp.before_run_id = before_run.run_id
LEFT JOIN comparable_groups AS g ON cp.group_id = g.group_id
LEFT JOIN baseline_backends AS bb ON cp.group_id = bb.group_id
ORDER BY
    cp.observed_at DESC,
    cp.verdict DESC,
    cp.ratio ASC,
    cp.kernel ASC,
    cp.gpu_name ASC,
    cp.pass ASC,
    cp.metric ASC,
    cp.workload_slug ASC,
    cp.provider ASC,
    cp.backend ASC
