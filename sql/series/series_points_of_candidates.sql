-- The points of the series of candidate_series (the groups that can hold a
-- step), as sql/series/series_points.sql gives every series' points and in
-- its order: the same commit and the same order, read only where the search
-- for change points needs them; $lo and $hi as there.
SELECT
    runs.value::DOUBLE AS value,
    coalesce(runs.benchmarked_commit, first_seen."commit", runs.first_seen_snapshot) AS "commit",
    runs.rowid AS row_id
FROM runs
INNER JOIN series_candidates AS candidates
    ON
        runs.group_id = candidates.group_id
        AND runs.provider IS NOT DISTINCT FROM candidates.provider
        AND runs.backend IS NOT DISTINCT FROM candidates.backend
LEFT JOIN snapshots AS first_seen ON runs.first_seen_snapshot = first_seen.snapshot_id
LEFT JOIN commit_places AS placed ON runs.benchmarked_commit = placed.benchmarked_commit
WHERE
    runs.status = 'passed' AND runs.value > 0
    AND ($lo IS NULL OR runs.group_id >= $lo) AND ($hi IS NULL OR runs.group_id < $hi)
ORDER BY
    candidates.series_number,
    coalesce(placed.commit_at, runs.observed_at),
    history_key(runs.observed_at, runs.rowid)
