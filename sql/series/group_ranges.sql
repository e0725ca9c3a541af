-- Where to cut the groups so that each range holds about as many of the
-- points series_points.sql sorts: the group ids at the $quantiles of the
-- points, ascending, each the first group of a range (none for one range).
-- n_points: how many points there are, to choose the quantiles by.
SELECT
    count(*) AS n_points,
    list_sort(list_distinct(quantile_disc(group_id, $quantiles::DOUBLE[]))) AS bounds
FROM runs
WHERE status = 'passed' AND value > 0
