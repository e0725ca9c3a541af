-- The latest passed run of each (group, provider, backend), the greatest
-- observed_at (ties: the greatest run_id), as its rowid in runs. An
-- implementation is a provider and the backend its file was written for
-- (SPEC section 4): the cuTile file's `liger` is not the Triton file's, so
-- each has its own latest run. A temporary table, read by the statistics that
-- compare latest runs.
SELECT
    group_id,
    provider,
    backend,
    arg_max(rowid, history_key(observed_at, rowid)) AS latest_row
FROM runs
WHERE status = 'passed'
GROUP BY group_id, provider, backend
