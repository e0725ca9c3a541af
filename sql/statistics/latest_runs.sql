-- The latest passed run of each (group, provider), the greatest observed_at
-- (ties: the greatest run_id), as its rowid in runs. A temporary table, read
-- by the statistics that compare latest runs.
SELECT
    group_id,
    provider,
    arg_max(rowid, history_key(observed_at, rowid)) AS latest_row
FROM runs
WHERE status = 'passed'
GROUP BY group_id, provider
