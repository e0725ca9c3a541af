-- The points series_points.sql sorts, counted per group: what
-- group_ranges.sql cuts the groups by. Counted per group first: quantile_disc
-- over every point's group id held them all in memory (10M runs: past the
-- build's DuckDB limit, which a hash aggregate and a window spill under).
SELECT
    group_id,
    count(*) AS n
FROM runs
WHERE status = 'passed' AND value > 0
GROUP BY group_id
