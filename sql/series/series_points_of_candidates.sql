-- The points of the series of candidate_series (the groups that can hold a
-- step), as sql/series/series_points.sql gives every series' points and in
-- its order, read only where the search for change points needs them; $lo and
-- $hi as there.
SELECT
    points.value,
    points."commit",
    points.row_id
FROM run_points AS points
INNER JOIN series_candidates AS candidates
    ON
        points.group_id = candidates.group_id
        AND points.provider IS NOT DISTINCT FROM candidates.provider
        AND points.backend IS NOT DISTINCT FROM candidates.backend
WHERE ($lo IS NULL OR points.group_id >= $lo) AND ($hi IS NULL OR points.group_id < $hi)
ORDER BY
    candidates.series_number,
    points.placed_at,
    history_key(points.observed_at, points.row_id)
