-- The points of every series of the contender (SPEC section 9): each passed
-- run of a (group_id, provider, backend) in the registered `contender_series`,
-- with its value, its commit and its place in time, for
-- pipelines/verdict/level.py to take the level of the current segment.
-- Choices the SPEC leaves open:
-- - a run that is one of the contender's own (its run_id is in
--   `contender_runs`: the contender file was ingested too) is left out, so a
--   contender is never its own baseline;
-- - runs of every stream count (a series is the group's runs, SPEC section 8);
-- - commit: the benchmarked commit of a CI folder's run, else the data commit
--   of the snapshot that first carried it, else that snapshot (as
--   sql/series/series_points.sql): two points of one commit are reruns, one
--   point of the level;
-- - order: the commit's place in main where the warehouse can tell it (the
--   view commit_places, as the change points order the series), else when the
--   run ran;
-- - a value that is not above zero is no point (quarantined upstream anyway).
SELECT
    r.group_id,
    r.provider,
    r.backend,
    r.value::DOUBLE AS value,
    coalesce(r.benchmarked_commit, first_seen."commit", r.first_seen_snapshot) AS "commit",
    coalesce(placed.commit_at, r.observed_at) AS "order"
FROM runs AS r
SEMI JOIN contender_series AS s
    ON r.group_id = s.group_id AND r.provider = s.provider AND r.backend = s.backend
LEFT JOIN snapshots AS first_seen ON r.first_seen_snapshot = first_seen.snapshot_id
LEFT JOIN commit_places AS placed ON r.benchmarked_commit = placed.benchmarked_commit
WHERE
    r.status = 'passed'
    AND r.value > 0
    AND r.run_id NOT IN (SELECT run_id FROM contender_runs)
