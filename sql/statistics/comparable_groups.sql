-- One row per comparable group (one kernel, workload, pass, metric and GPU)
-- that has at least one passed run; a group whose runs all failed has no row.
-- median_value: the mean of the two middle values when the count is even.
-- n_providers counts providers, n_implementations (provider, backend) pairs
-- (SPEC section 4): the cuTile and Triton files' liger are one provider, two
-- implementations.
-- best_provider, best_backend: the implementation with the lowest latest
-- value; a tie goes to the one whose (provider, backend) sorts first.
-- best_ratio: the best implementation's ratio to its baseline (null without
-- one), whose backend is best_baseline_backend (provider_comparisons chooses
-- it per implementation; baseline_provider is the group's).
-- Rows are stored in no particular order.
-- n_runs, first_observed, last_observed and the values: group_summary, a
-- temporary table made before it (its medians do not fit beside the joins).
-- $lo and $hi: only the groups from $lo and before $hi (null: no bound). The
-- build makes it whole; where that does not fit DuckDB's memory, one range of
-- groups at a time (database_build).
-- Apart from group_summary: a count(DISTINCT) there makes DuckDB buffer the whole scan for a second pass.
WITH passed_versions AS (
    SELECT DISTINCT
        group_id,
        liger_version
    FROM runs
    WHERE status = 'passed' AND group_in_range(group_id, $lo, $hi)
),

versions AS (
    SELECT
        group_id,
        count(liger_version) AS n_versions
    FROM passed_versions
    GROUP BY group_id
),

-- A group's runs share kernel, pass, metric, workload and GPU (its id hashes
-- them), so one of its latest runs describes it.
described AS (
    SELECT
        group_id,
        kernel,
        pass,
        metric,
        workload_slug,
        workload_digest,
        protocol_digest,
        environment_digest,
        gpu_name,
        unit
    FROM runs
    WHERE rowid IN (
        SELECT min(latest_row)
        FROM latest_runs
        WHERE group_in_range(group_id, $lo, $hi)
        GROUP BY group_id
    )
),

best AS (
    SELECT
        group_id,
        count(DISTINCT provider) AS n_providers,
        count(*) AS n_implementations,
        any_value(baseline_provider) AS baseline_provider,
        min(value) AS best_value,
        arg_min(
            {'provider': provider, 'backend': backend, 'ratio': ratio, 'baseline_backend': baseline_backend},
            {'provider': provider, 'backend': backend}
        ) FILTER (WHERE rank = 1) AS winner
    FROM provider_comparisons
    WHERE group_in_range(group_id, $lo, $hi)
    GROUP BY group_id
)

SELECT
    described.* EXCLUDE (unit),
    n_runs,
    n_providers,
    n_implementations,
    n_versions,
    group_summary.* EXCLUDE (group_id, n_runs),
    unit,
    baseline_provider,
    winner.provider AS best_provider,
    winner.backend AS best_backend,
    best_value,
    winner.ratio AS best_ratio,
    winner.baseline_backend AS best_baseline_backend
FROM described
INNER JOIN group_summary USING (group_id)
INNER JOIN versions USING (group_id)
INNER JOIN best USING (group_id)
