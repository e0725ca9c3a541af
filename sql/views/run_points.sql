-- Each passed run with a positive value as a point of its series (SPEC section
-- 8, a series being a (group_id, provider, backend)): the one place that says a
-- point's commit and where it sits, which every reading of the series in
-- sql/series/ takes from here.
-- commit: the benchmarked commit where the run came from a CI folder, else the
-- data commit of the snapshot that first carried it, else (a plain file) that
-- snapshot's id: two points with one commit are reruns of the same code.
-- placed_at: the commit's place in upstream's main (the view commit_places)
-- where the warehouse can tell it, else when the run ran; a series is ordered
-- by placed_at, then observed_at, then run_id.
-- row_id: the run's rowid in runs (run_id order), to join back on.
SELECT
    runs.rowid AS row_id,
    runs.run_id,
    runs.group_id,
    runs.provider,
    runs.backend,
    runs.value::DOUBLE AS value,
    coalesce(runs.benchmarked_commit, first_seen."commit", runs.first_seen_snapshot) AS "commit",
    coalesce(placed.commit_at, runs.observed_at) AS placed_at,
    runs.observed_at
FROM runs
LEFT JOIN snapshots AS first_seen ON runs.first_seen_snapshot = first_seen.snapshot_id
LEFT JOIN commit_places AS placed ON runs.benchmarked_commit = placed.benchmarked_commit
WHERE runs.status = 'passed' AND runs.value > 0
