-- Every series of each group that holds a series that can hold a step (a
-- candidate), for pipelines/series/series_tables.py's search for change points: a
-- directed unit, a known noise, at least min_points points and a range of
-- ln value at least min_shift_noises noises wide (the smallest shift a step
-- may have); most series are one run or two and can hold none. The other
-- series of the group are the candidates' witnesses of the host (cause.py).
-- In the order of series.sql, so that series_points_of_candidates.sql's points
-- can be cut into series by position: series_number, by which both order them
-- (an integer sorts faster than the three texts).
WITH judged AS (
    SELECT
        parts.group_id,
        parts.provider,
        parts.backend,
        parts.n_points,
        noise.noise,
        coalesce(
            lower_is_better(parts.unit)
            AND parts.n_points >= getvariable('min_points')
            AND noise.noise IS NOT NULL
            AND parts.spread >= getvariable('min_shift_noises') * noise.noise,
            FALSE
        ) AS candidate
    FROM series_parts AS parts
    INNER JOIN series_noise AS noise USING (group_id, provider, backend)
)

SELECT
    *,
    row_number() OVER (ORDER BY group_id, provider, backend) AS series_number
FROM judged
WHERE
    group_id IN (
        SELECT holding.group_id
        FROM judged AS holding
        WHERE holding.candidate
    )
ORDER BY group_id, provider, backend
