-- Every ratio that is not null is positive and finite. Each row is one that
-- isn't, with the table, the column and the row it sits in (an implementation
-- is named by provider and backend, SPEC section 4).
WITH ratios AS (
    SELECT
        'comparable_groups' AS table_name,
        'best_ratio' AS column_name,
        group_id AS row_key,
        best_ratio AS ratio
    FROM comparable_groups
    UNION ALL
    SELECT
        'provider_comparisons',
        'ratio',
        concat_ws(' ', group_id, provider, backend),
        ratio
    FROM provider_comparisons
    UNION ALL
    SELECT
        'version_changes',
        'ratio',
        run_id,
        ratio
    FROM version_changes
    UNION ALL
    SELECT
        'kernel_scorecard',
        column_name,
        concat_ws(' ', kernel, pass, metric, gpu_name, provider, backend, baseline_provider, baseline_backend),
        ratio
    FROM (UNPIVOT kernel_scorecard ON geomean_ratio, min_ratio, max_ratio INTO NAME column_name VALUE ratio)
    UNION ALL
    SELECT
        'sweep_comparisons',
        column_name,
        concat_ws(' ', kernel, pass, metric, gpu_name, x_key, sweep_digest, provider, backend, baseline_provider, baseline_backend),
        ratio
    FROM (UNPIVOT sweep_comparisons ON geomean_ratio, min_ratio, max_ratio INTO NAME column_name VALUE ratio)
)

SELECT *
FROM ratios
WHERE ratio IS NOT NULL AND NOT (ratio > 0 AND isfinite(ratio))
ORDER BY table_name, column_name, row_key
