-- series_points.sql for one range of rowids (series_in_stored_order.sql): the
-- points in stored order, which holds each series as one block. Each point's
-- place in its series' order is not sorted here, where it would sort texts,
-- but by pipelines/series/series_tables.py, within each series: by
-- placed_at, then observed_at, then rowid, the order of series_points.sql
-- (history_key orders by the last two), as microseconds. series_hash: the
-- point's series, as series_in_stored_order.sql names it.
SELECT
    value,
    "commit",
    row_id,
    hash(group_id, provider, backend) AS series_hash,
    epoch_us(placed_at) AS placed_at,
    epoch_us(observed_at) AS observed_at
FROM run_points
WHERE row_id >= $lo AND row_id < $hi
ORDER BY row_id
