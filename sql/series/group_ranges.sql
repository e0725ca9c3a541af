-- Where to cut the groups so that each range holds about as many of the
-- points series_points.sql sorts: for each of the $quantiles, the first group
-- whose running count of points (groups in id order) reaches that share of
-- them; ascending and distinct, each the first group of a range (none for one
-- range). n_points: how many points there are, to choose the quantiles by.
-- Counted per group first: quantile_disc over every point's group id held
-- them all in memory (10M runs: past the build's DuckDB limit, which a hash
-- aggregate and a window spill under).
WITH per_group AS (
    SELECT
        group_id,
        count(*) AS n
    FROM runs
    WHERE status = 'passed' AND value > 0
    GROUP BY group_id
),

placed AS (
    SELECT
        group_id,
        sum(n) OVER (ORDER BY group_id ROWS UNBOUNDED PRECEDING) AS upto,
        sum(n) OVER () AS total
    FROM per_group
),

cuts AS (
    SELECT min(p.group_id) AS bound
    FROM unnest($quantiles::DOUBLE[]) AS q (share)
    INNER JOIN placed AS p ON p.upto >= q.share * p.total
    GROUP BY q.share
)

SELECT
    (SELECT coalesce(sum(n), 0) FROM per_group)::BIGINT AS n_points,
    coalesce((SELECT list_sort(list_distinct(list(bound))) FROM cuts), []) AS bounds
