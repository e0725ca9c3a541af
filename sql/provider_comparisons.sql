-- One row per (group, provider) from the provider's latest passed run, against
-- the group's baseline: the first provider of the configured baseline list
-- with a passed run in the group.
-- ratio = baseline value / value for latency and memory (above 1: faster or
-- smaller than the baseline); null for a metric of unknown direction.
-- The baseline's own row has ratio 1 and null separated and within_noise; a
-- group without a baseline has null baseline columns and ratios.
-- within_noise: |ln ratio| is at most the two runs' combined noise,
-- sqrt(sigma_log^2 + baseline_sigma_log^2), as in run_noise.
-- noise, the label a reader wants: baseline, no baseline, separated (SPEC's
-- test, first), within noise, overlapping, or null when p20/p80 are unknown.
-- rank: 1 = lowest value; equal values share a rank.
WITH latest AS (
    SELECT
        *,
        log_normal_sigma(p20, p80) AS sigma_log
    FROM runs
    WHERE status = 'passed'
    QUALIFY row_number() OVER (PARTITION BY group_id, provider ORDER BY observed_at DESC, run_id DESC) = 1
),

baselines AS (
    SELECT
        group_id,
        arg_min(provider, list_position(getvariable('baselines'), provider)) AS baseline_provider
    FROM latest
    WHERE list_position(getvariable('baselines'), provider) IS NOT NULL
    GROUP BY group_id
),

paired AS (
    SELECT
        latest.*,
        baselines.baseline_provider,
        baseline.run_id AS baseline_run_id,
        baseline.value AS baseline_value,
        baseline.p20 AS baseline_p20,
        baseline.p80 AS baseline_p80,
        baseline.sigma_log AS baseline_sigma_log
    FROM latest
    LEFT JOIN baselines USING (group_id)
    LEFT JOIN latest AS baseline
        ON baseline.group_id = latest.group_id AND baseline.provider = baselines.baseline_provider
),

ratios AS (
    SELECT
        *,
        improvement_ratio(baseline_value, value, unit) AS ratio,
        provider <> baseline_provider AS challenger,
        sqrt(sigma_log ^ 2 + baseline_sigma_log ^ 2) AS noise_sigma_log
    FROM paired
),

compared AS (
    SELECT
        *,
        CASE WHEN challenger THEN intervals_separated(p20, p80, baseline_p20, baseline_p80) END AS separated,
        CASE WHEN challenger THEN abs(ln(ratio)) <= noise_sigma_log END AS within_noise
    FROM ratios
)

SELECT
    group_id,
    kernel,
    pass,
    metric,
    gpu_name,
    workload_slug,
    provider,
    run_id,
    liger_version,
    observed_at,
    value,
    p20,
    p80,
    unit,
    sigma_log,
    baseline_provider,
    baseline_run_id,
    baseline_value,
    baseline_p20,
    baseline_p80,
    ratio,
    separated,
    noise_sigma_log,
    within_noise,
    CASE
        WHEN baseline_provider IS NULL THEN 'no baseline'
        WHEN NOT challenger THEN 'baseline'
        WHEN separated THEN 'separated'
        WHEN within_noise THEN 'within noise'
        WHEN NOT separated THEN 'overlapping'
    END AS noise,
    rank() OVER (PARTITION BY group_id ORDER BY value) AS rank
FROM compared
ORDER BY group_id, rank, provider
