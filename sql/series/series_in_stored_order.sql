-- series.sql for one range of rowids that holds whole series, each one block
-- of runs as stored (stored_ranges.sql says where to cut and whether they
-- are): the same columns, the series in the order of their first run as
-- stored, as points_in_stored_order.sql gives their points. series_hash names
-- each series as points_in_stored_order.sql does, for the check that the two
-- agree. $lo and $hi: the range's first rowid and the one after its last.
SELECT
    group_id,
    provider,
    backend,
    any_value(unit) AS unit,
    count(*) AS n_points,
    hash(any_value(kernel), any_value(pass), any_value(metric), any_value(gpu_name), provider, backend) AS pool,
    hash(any_value(metric), any_value(gpu_name)) AS metric_pool,
    hash(group_id, provider, backend) AS series_hash
FROM runs
WHERE
    status = 'passed' AND value > 0
    AND rowid >= $lo AND rowid < $hi
GROUP BY group_id, provider, backend
ORDER BY min(rowid)
