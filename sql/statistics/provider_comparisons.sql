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
-- Rows are stored in no particular order.
-- latest is read twice, from runs each time: fetching the latest runs by rowid
-- costs less than buffering them.
WITH latest AS NOT MATERIALIZED (
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
        log_normal_sigma(p20, p80) AS sigma_log,
        list_position(getvariable('baselines'), provider) AS baseline_place
    FROM runs
    WHERE rowid IN (SELECT latest_row FROM latest_runs)
),

-- Per group, the baseline's latest run (arg_min skips providers not in the
-- list: their place is null) and every latest value, to rank against.
groups AS (
    SELECT
        group_id,
        arg_min(provider, baseline_place) AS baseline_provider,
        arg_min_null(run_id, baseline_place) AS baseline_run_id,
        arg_min_null(value, baseline_place) AS baseline_value,
        arg_min_null(p20, baseline_place) AS baseline_p20,
        arg_min_null(p80, baseline_place) AS baseline_p80,
        arg_min_null(sigma_log, baseline_place) AS baseline_sigma_log,
        list(value) AS group_values
    FROM latest
    GROUP BY group_id
),

ratios AS (
    SELECT
        latest.* EXCLUDE (baseline_place),
        groups.* EXCLUDE (group_id),
        improvement_ratio(baseline_value, value, unit) AS ratio,
        provider <> baseline_provider AS challenger,
        sqrt(sigma_log ^ 2 + baseline_sigma_log ^ 2) AS noise_sigma_log
    FROM latest
    JOIN groups USING (group_id)
),

compared AS (
    SELECT
        *,
        CASE WHEN challenger THEN intervals_separated(p20, p80, baseline_p20, baseline_p80) END AS separated,
        CASE WHEN challenger THEN abs(ln(ratio)) <= noise_sigma_log END AS within_noise
    FROM ratios
)

SELECT
    * EXCLUDE (baseline_sigma_log, group_values, challenger, ratio, separated, noise_sigma_log, within_noise),
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
    -- rank() over the group's values, without sorting every group: passed runs have a value.
    1 + len(list_filter(group_values, lambda other: other < value)) AS rank
FROM compared
