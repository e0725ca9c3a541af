-- series_points.sql for one range of rowids (series_in_stored_order.sql): the
-- points in stored order, which holds each series as one block. Each point's
-- place in its series' order is not sorted here, where it would sort texts,
-- but by pipelines/series/series_tables.py, within each series: by
-- placed_at (the commit's place, else when it ran), then observed_at, then
-- rowid, the order of series_points.sql (history_key orders by the last two),
-- as microseconds. series_hash: the point's series, as
-- series_in_stored_order.sql names it.
SELECT
    runs.value::DOUBLE AS value,
    coalesce(runs.benchmarked_commit, first_seen."commit", runs.first_seen_snapshot) AS "commit",
    runs.rowid AS row_id,
    hash(runs.group_id, runs.provider, runs.backend) AS series_hash,
    epoch_us(coalesce(placed.commit_at, runs.observed_at)) AS placed_at,
    epoch_us(runs.observed_at) AS observed_at
FROM runs
LEFT JOIN snapshots AS first_seen ON runs.first_seen_snapshot = first_seen.snapshot_id
LEFT JOIN commit_places AS placed ON runs.benchmarked_commit = placed.benchmarked_commit
WHERE
    runs.status = 'passed' AND runs.value > 0
    AND runs.rowid >= $lo AND runs.rowid < $hi
ORDER BY runs.rowid
