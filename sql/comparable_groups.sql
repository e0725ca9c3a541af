-- One row per comparable group (one kernel, workload, pass, metric and GPU)
-- that has at least one passed run; a group whose runs all failed has no row.
-- median_value: the mean of the two middle values when the count is even.
-- best_provider: the lowest latest value; a tie goes to the name sorting first.
-- best_ratio: the best provider's ratio to the baseline (null without one).
WITH summary AS (
    SELECT
        group_id,
        any_value(kernel) AS kernel,
        any_value(pass) AS pass,
        any_value(metric) AS metric,
        any_value(workload_slug) AS workload_slug,
        any_value(workload_digest) AS workload_digest,
        any_value(protocol_digest) AS protocol_digest,
        any_value(environment_digest) AS environment_digest,
        any_value(gpu_name) AS gpu_name,
        count(*) AS n_runs,
        count(DISTINCT provider) AS n_providers,
        count(DISTINCT liger_version) AS n_versions,
        min(observed_at) AS first_observed,
        max(observed_at) AS last_observed,
        min(value) AS min_value,
        median(value) AS median_value,
        max(value) AS max_value,
        any_value(unit) AS unit
    FROM runs
    WHERE status = 'passed'
    GROUP BY group_id
),

best AS (
    SELECT
        group_id,
        baseline_provider,
        provider AS best_provider,
        value AS best_value,
        ratio AS best_ratio
    FROM provider_comparisons
    QUALIFY row_number() OVER (PARTITION BY group_id ORDER BY value, provider) = 1
)

SELECT
    summary.*,
    best.baseline_provider,
    best.best_provider,
    best.best_value,
    best.best_ratio
FROM summary
LEFT JOIN best USING (group_id)
ORDER BY kernel, pass, metric, gpu_name, workload_slug
