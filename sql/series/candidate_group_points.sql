-- group_points.sql for the search for change points: the points
-- series_points_of_candidates.sql sorts, per group of series_candidates
-- (candidate_series.sql), counted from the series' n_points (no read of runs).
-- The candidates' points are a few percent to a third of all points, so their
-- ranges are fewer than every point's, and each range is one more scan of
-- every run.
SELECT
    group_id,
    sum(n_points) AS n
FROM series_candidates
GROUP BY group_id
