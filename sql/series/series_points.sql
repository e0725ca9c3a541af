-- The points of every series (SPEC section 8), series after series in the
-- order of sql/series/series.sql: what pipelines/series reads to compute
-- series_noise and change_points. Only the value, the commit and the run's
-- rowid (for joining back) per point: a series' own columns are read once, by
-- series.sql.
-- commit: the benchmarked commit where the run came from a CI folder, else the
-- data commit of the snapshot that first carried it, else (a plain file) that
-- snapshot's id: two points with one commit are reruns of the same code.
-- Order: by the commit's place in upstream's main where the warehouse can tell
-- it (the view commit_places), else when it was run; that time is not
-- returned: a column carried through the sort of every point cost a third of
-- its time (docs/performance.md).
-- $lo and $hi: only the groups from $lo and before $hi (null: no bound), as
-- in series.sql: pipelines/series/series_tables.py reads a range of groups at a time.
SELECT
    runs.value::DOUBLE AS value,
    coalesce(runs.benchmarked_commit, first_seen."commit", runs.first_seen_snapshot) AS "commit",
    runs.rowid AS row_id
FROM runs
LEFT JOIN snapshots AS first_seen ON runs.first_seen_snapshot = first_seen.snapshot_id
LEFT JOIN commit_places AS placed ON runs.benchmarked_commit = placed.benchmarked_commit
WHERE
    runs.status = 'passed' AND runs.value > 0
    AND ($lo IS NULL OR runs.group_id >= $lo) AND ($hi IS NULL OR runs.group_id < $hi)
ORDER BY
    runs.group_id,
    runs.provider,
    runs.backend,
    coalesce(placed.commit_at, runs.observed_at),
    history_key(runs.observed_at, runs.rowid)
