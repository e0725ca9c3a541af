-- The runs version_changes.sql reads, in the order it needs them: each series
-- one block, in (observed_at, run_id) order (run_id by runs' rowid, as the
-- window statistics take it). What database_build sorts into a temporary
-- `runs` that stands in for the stored one when the stored order does not
-- hold each series so (its count says: version_changes_rows.sql).
-- Every column: the statistic takes what it needs, and the build sorts this
-- only where run ids do not keep a series together (upstream's and the
-- synthetic ones do).
SELECT *
FROM runs
WHERE
    status = 'passed'
    -- $lo and $hi: the groups from $lo and before $hi (null: no bound), as
    -- the series SQL takes them: the build sorts one range at a time, within
    -- DuckDB's memory (10M runs in one window spilled: 43 s, by ranges 28 s).
    AND ($lo IS NULL OR group_id >= $lo) AND ($hi IS NULL OR group_id < $hi)
ORDER BY group_id, provider, backend, history_key(observed_at, rowid)
