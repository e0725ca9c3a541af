-- Per (kernel, pass, metric, GPU, provider, baseline provider), over the
-- groups where the provider has a ratio to a baseline other than itself.
-- A provider compared against huggingface in some groups and torch in others
-- gets one row per baseline, since ratios to different baselines don't mix.
-- wins: ratio > 1 and separated; losses: ratio < 1 and separated; draws: the
-- rest, so wins + losses + draws = n_groups.
WITH challenges AS (
    SELECT *
    FROM provider_comparisons
    WHERE provider <> baseline_provider AND ratio IS NOT NULL
)

SELECT
    kernel,
    pass,
    metric,
    gpu_name,
    provider,
    baseline_provider,
    count(*) AS n_groups,
    exp(avg(ln(ratio))) AS geomean_ratio,
    min(ratio) AS min_ratio,
    max(ratio) AS max_ratio,
    count(*) FILTER (WHERE ratio > 1 AND separated) AS wins,
    count(*) FILTER (WHERE ratio < 1 AND separated) AS losses,
    n_groups - wins - losses AS draws
FROM challenges
GROUP BY kernel, pass, metric, gpu_name, provider, baseline_provider
ORDER BY kernel, pass, metric, gpu_name, provider, baseline_provider
