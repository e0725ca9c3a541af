-- The points of every series of the contender (SPEC section 9): each passed
-- run of a (group_id, provider, backend) in the registered `contender_series`,
-- with its value, its commit and its place in time, for
-- pipelines/verdict/level.py to take the level of the current segment.
-- Choices the SPEC leaves open:
-- - a run that is one of the contender's own (its run_id is in
--   `contender_runs`: the contender file was ingested too) is left out, so a
--   contender is never its own baseline;
-- - runs of every stream count (a series is the group's runs, SPEC section 8);
-- - commit and order: a point's commit and its place (placed_at), as the
--   view run_points says them for the series (sql/series/): two points of one
--   commit are reruns, one point of the level;
-- - a value that is not above zero is no point (quarantined upstream anyway).
SELECT
    points.group_id,
    points.provider,
    points.backend,
    points.value,
    points."commit",
    points.placed_at AS "order"
FROM run_points AS points
SEMI JOIN contender_series AS s
    ON points.group_id = s.group_id AND points.provider = s.provider AND points.backend = s.backend
WHERE points.run_id NOT IN (SELECT run_id FROM contender_runs)
