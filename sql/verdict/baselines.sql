-- A contender's baselines (SPEC section 9): per series of the contender
-- (group_id, provider, backend in the registered `contender_series`), the
-- series' latest $points passed runs in the warehouse, in observed_at order
-- (ties: the greater run_id is the later), on the same GPU by construction
-- (the GPU is part of the group): their median (the baseline value and its
-- ratio), their lowest and highest value (the range a run must leave to be
-- judged faster or slower: pipelines/verdict/judge.py) and how many there are.
-- Choices the SPEC leaves open:
-- - a run of the warehouse that is one of the contender's own runs (its run_id
--   is in `contender_runs`: the contender file was ingested too) is left out,
--   so a contender is never its own baseline;
-- - runs of every stream count (a series is the group's runs, SPEC section 8);
-- - a value that is not above zero is no point (quarantined upstream anyway).
WITH points AS (
    SELECT
        r.group_id,
        r.provider,
        r.backend,
        r.value,
        r.observed_at,
        row_number() OVER (
            PARTITION BY r.group_id, r.provider, r.backend ORDER BY r.observed_at DESC, r.run_id DESC
        ) AS age
    FROM runs AS r
    SEMI JOIN contender_series AS s
        ON r.group_id = s.group_id AND r.provider = s.provider AND r.backend = s.backend
    WHERE
        r.status = 'passed'
        AND r.value > 0
        AND r.run_id NOT IN (SELECT run_id FROM contender_runs)
)

SELECT
    group_id,
    provider,
    backend,
    median(value) AS baseline_value,
    min(value) AS baseline_low,
    max(value) AS baseline_high,
    count(*) AS baseline_points,
    max(observed_at) AS baseline_observed_at
FROM points
WHERE age <= $points
GROUP BY group_id, provider, backend
