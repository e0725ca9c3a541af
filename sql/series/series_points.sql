-- The points of every series (SPEC section 8), series after series in the
-- order of sql/series/series.sql: what pipelines/series reads to compute
-- series_noise and change_points. Only the value, the commit and the run's
-- rowid (for joining back) per point, as the view run_points says them: a
-- series' own columns are read once, by series.sql.
-- Order: by placed_at (the commit's place in upstream's main where the
-- warehouse can tell it, else when it was run), then (observed_at, run_id);
-- that time is not returned: a column carried through the sort of every point
-- cost a third of its time (docs/performance.md).
-- $lo and $hi: only the groups from $lo and before $hi (null: no bound), as
-- in series.sql: pipelines/series/series_tables.py reads a range of groups at a time.
SELECT
    value,
    "commit",
    row_id
FROM run_points
WHERE ($lo IS NULL OR group_id >= $lo) AND ($hi IS NULL OR group_id < $hi)
ORDER BY
    group_id,
    provider,
    backend,
    placed_at,
    history_key(observed_at, row_id)
