-- group_ranges.sql for the search for change points: where to cut the groups
-- of series_candidates (candidate_series.sql) so that each range holds about
-- as many of the points series_points_of_candidates.sql sorts, counted from
-- the series' n_points (no read of runs). The candidates' points are a few
-- percent to a third of all points, so their ranges are fewer than
-- group_ranges.sql's, and each range is one more scan of every run.
WITH per_group AS (
    SELECT
        group_id,
        sum(n_points) AS n
    FROM series_candidates
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
