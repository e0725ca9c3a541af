-- Per (kernel, pass, metric, GPU, provider, backend, baseline provider,
-- baseline backend), over the groups where the implementation (provider and
-- backend, SPEC section 4) has a ratio to a baseline other than itself.
-- The cuTile file's liger and the Triton file's liger are two rows: mixed,
-- their geometric mean would be neither's. An implementation compared
-- against huggingface in some groups and torch in others, or against the
-- baseline's run of another backend where its own backend has none (see
-- provider_comparisons), gets one row per baseline implementation, since
-- ratios to different baselines don't mix.
-- wins: ratio > 1 and separated; losses: ratio < 1 and separated; draws: the
-- rest, so wins + losses + draws = n_groups.
WITH challenges AS (
    SELECT *
    FROM provider_comparisons
    WHERE (provider <> baseline_provider OR backend <> baseline_backend) AND ratio IS NOT NULL
)

SELECT
    kernel,
    pass,
    metric,
    gpu_name,
    provider,
    backend,
    baseline_provider,
    baseline_backend,
    count(*) AS n_groups,
    ordered_geomean(ratio) AS geomean_ratio,
    min(ratio) AS min_ratio,
    max(ratio) AS max_ratio,
    count(*) FILTER (WHERE ratio > 1 AND separated) AS wins,
    count(*) FILTER (WHERE ratio < 1 AND separated) AS losses,
    n_groups - wins - losses AS draws
FROM challenges
GROUP BY kernel, pass, metric, gpu_name, provider, backend, baseline_provider, baseline_backend
ORDER BY kernel, pass, metric, gpu_name, provider, backend, baseline_provider, baseline_backend
