-- One row per (group, provider, backend), an implementation (SPEC section 4),
-- from its latest passed run, against the group's baseline: the first
-- provider of the configured baseline list with a passed run in the group.
-- The baseline is an implementation too: where the baseline provider ran for
-- several backends, a row is compared with the baseline's run of the row's own
-- backend (upstream's cuTile file benchmarks its own torch beside its liger),
-- else with its `triton` run, else with the backend whose name sorts first;
-- baseline_backend says which. So the cuTile file's liger and the Triton
-- file's liger are two rows, each against its own file's baseline.
-- ratio = baseline value / value for latency and memory (above 1: faster or
-- smaller than the baseline); null for a metric of unknown direction.
-- The baseline's own rows (one per backend it ran for: each is its own
-- baseline) have ratio 1 and null separated and within_noise; a group without
-- a baseline has null baseline columns and ratios.
-- within_noise: |ln ratio| is at most the two runs' combined noise,
-- sqrt(sigma_log^2 + baseline_sigma_log^2), as in run_noise.
-- noise, the label a reader wants: baseline, no baseline, separated (SPEC's
-- test, first), within noise, overlapping, or null when p20/p80 are unknown.
-- rank: 1 = lowest value among the group's implementations; equal values share
-- a rank.
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
        backend,
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

-- Per group: the baseline provider (arg_min skips providers not in the list:
-- their place is null); its default run, of `triton` else of the backend
-- first by name; the listed providers' runs of other backends, to find a
-- row's own backend in (null without any: with one backend, the common case,
-- nothing is searched); and every latest value, to rank against.
groups AS (
    SELECT
        group_id,
        arg_min(provider, baseline_place) AS baseline_provider,
        min(baseline_place) AS baseline_place,
        arg_min(
            {
                'backend': backend,
                'place': baseline_place,
                'run_id': run_id,
                'value': value,
                'p20': p20,
                'p80': p80,
                'sigma_log': sigma_log
            },
            {'place': baseline_place, 'not_triton': backend <> 'triton', 'backend': backend}
        ) FILTER (WHERE baseline_place IS NOT NULL) AS default_baseline,
        list({
            'backend': backend,
            'place': baseline_place,
            'run_id': run_id,
            'value': value,
            'p20': p20,
            'p80': p80,
            'sigma_log': sigma_log
        }) FILTER (WHERE baseline_place IS NOT NULL AND backend <> 'triton') AS other_backends,
        list(value) AS group_values
    FROM latest
    GROUP BY group_id
),

paired AS (
    SELECT
        latest.* EXCLUDE (baseline_place),
        groups.baseline_provider,
        CASE
            WHEN other_backends IS NULL OR latest.backend = default_baseline.backend THEN default_baseline
            ELSE coalesce(
                list_filter(
                    other_backends,
                    LAMBDA other: other.place = groups.baseline_place AND other.backend = latest.backend
                )[1],
                default_baseline
            )
        END AS baseline,
        groups.group_values
    FROM latest
    INNER JOIN groups USING (group_id)
),

ratios AS (
    SELECT
        * EXCLUDE (baseline),
        baseline.backend AS baseline_backend,
        baseline.run_id AS baseline_run_id,
        baseline.value AS baseline_value,
        baseline.p20 AS baseline_p20,
        baseline.p80 AS baseline_p80,
        baseline.sigma_log AS baseline_sigma_log,
        improvement_ratio(baseline.value, value, unit) AS ratio,
        provider <> baseline_provider OR backend <> baseline.backend AS challenger,
        sqrt(sigma_log ^ 2 + baseline.sigma_log ^ 2) AS noise_sigma_log
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
    1 + len(list_filter(group_values, LAMBDA other: other < value)) AS rank
FROM compared
