-- The rows version_changes must have: one per passed run, less the first run
-- of each series (latest_runs has one row per series).
SELECT count(*) FILTER (WHERE status = 'passed') - (SELECT count(*) FROM latest_runs) AS n_rows
FROM runs
