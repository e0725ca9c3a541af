-- The scorecard's counts add up to the comparisons they summarize: n_groups,
-- wins and losses match a recount of provider_comparisons per key, and
-- wins + losses + draws = n_groups. Each row is a key where they don't.
-- The key names implementations, (provider, backend), and their baseline's.
WITH recount AS (
    -- The scorecard's key, written as the join below names it.
    SELECT
        kernel,
        pass,
        metric,
        gpu_name,
        provider,
        backend,
        baseline_provider,
        baseline_backend,
        count(*) AS comparisons,
        count(*) FILTER (WHERE separated AND ratio > 1) AS separated_better,
        count(*) FILTER (WHERE separated AND ratio < 1) AS separated_worse
    FROM provider_comparisons
    WHERE ratio IS NOT NULL AND (provider <> baseline_provider OR backend <> baseline_backend)
    GROUP BY ALL
)

SELECT
    'kernel_scorecard' AS table_name,
    *
FROM kernel_scorecard
FULL JOIN recount USING (kernel, pass, metric, gpu_name, provider, backend, baseline_provider, baseline_backend)
WHERE
    kernel_scorecard.n_groups IS DISTINCT FROM recount.comparisons
    OR kernel_scorecard.wins IS DISTINCT FROM recount.separated_better
    OR kernel_scorecard.losses IS DISTINCT FROM recount.separated_worse
    OR kernel_scorecard.wins + kernel_scorecard.losses + kernel_scorecard.draws <> kernel_scorecard.n_groups
