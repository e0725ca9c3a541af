-- Every run as a reader sees it: every column of runs, with value, p20, p80
-- and unit in human units (ms for speed, MiB for memory, another metric in
-- its raw unit), and the upstream commits of the snapshots it was first and
-- last seen in (null when no snapshot row matches).

-- The report and `compare` read runs through this view, so the units and the
-- provenance are written once; a view stores nothing.
SELECT
    runs.* REPLACE (
        human_value(runs.value, runs.unit) AS value,
        human_value(runs.p20, runs.unit) AS p20,
        human_value(runs.p80, runs.unit) AS p80,
        human_unit(runs.unit) AS unit
    ),
    first_seen."commit" AS first_seen_commit,
    first_seen.subject AS first_seen_subject,
    last_seen."commit" AS last_seen_commit
FROM runs
LEFT JOIN snapshots AS first_seen ON runs.first_seen_snapshot = first_seen.snapshot_id
LEFT JOIN snapshots AS last_seen ON runs.last_seen_snapshot = last_seen.snapshot_id
