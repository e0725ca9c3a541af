-- Where to cut the groups so that each range holds about as many of the
-- points a series query sorts: for each of the $quantiles, the first group
-- whose running count of points (groups in id order) reaches that share of
-- them; ascending and distinct, each the first group of a range (none for one
-- range). n_points: how many points there are, to choose the quantiles by.
-- group_points: a temporary view of (group_id, n), the points per group, that
-- pipelines/series/series_tables.py makes from group_points.sql (every
-- series') or candidate_group_points.sql (the candidates').
WITH placed AS (
    SELECT
        group_id,
        sum(n) OVER (ORDER BY group_id ROWS UNBOUNDED PRECEDING) AS upto,
        sum(n) OVER () AS total
    FROM group_points
),

cuts AS (
    SELECT min(p.group_id) AS bound
    FROM unnest($quantiles::DOUBLE[]) AS q (share)
    INNER JOIN placed AS p ON p.upto >= q.share * p.total
    GROUP BY q.share
)

SELECT
    (SELECT coalesce(sum(n), 0) FROM group_points)::BIGINT AS n_points,
    coalesce((SELECT list_sort(list_distinct(list(bound))) FROM cuts), []) AS bounds
