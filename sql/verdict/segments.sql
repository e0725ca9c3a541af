-- Where each series of the contender (the registered `contender_series`) last
-- changed level: the time of the first run after its newest change point
-- (`change_points`, SPEC section 8). The verdict's level is taken from the
-- points at or after it (the current segment); a series without a change
-- point has no row and keeps all its points. A candidate (a step at the
-- history's newest one or two commits, not yet confirmed) starts no segment:
-- the judge sees that step through the history's newest point instead.
SELECT
    c.group_id,
    c.provider,
    c.backend,
    max(coalesce(placed.commit_at, c.observed_at)) AS segment_start
FROM change_points AS c
SEMI JOIN contender_series AS s
    ON c.group_id = s.group_id AND c.provider = s.provider AND c.backend = s.backend
LEFT JOIN commit_places AS placed ON c.after_commit = placed.benchmarked_commit
WHERE c.status = 'confirmed'
GROUP BY c.group_id, c.provider, c.backend
