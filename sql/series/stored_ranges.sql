-- Whether every series' points (the passed runs series.sql counts) are one
-- block of runs as stored, and where to cut runs into ranges of rowids that
-- hold whole series: pipelines/series/series_tables.py then reads each range
-- in stored order (series_in_stored_order.sql, points_in_stored_order.sql),
-- with no sort of texts. Runs are stored in run_id order, and run ids begin
-- with what makes a series (upstream's and the synthetic ones), so each series
-- is one block.
-- n_blocks: the blocks of one series in the order the runs are read (this
-- needs preserve_insertion_order); n_series: the series; they are equal only
-- when each series is one block. bounds: ascending, the first rowid of a
-- block, about one in every $range_rows rowids (the lowest, where the first
-- range begins, left out: none for one range).
-- A series is named by a 64-bit hash of its three texts, as
-- series_in_stored_order.sql names it; series_tables.py checks each range's
-- series against its points by it.
WITH keyed AS NOT MATERIALIZED (
    SELECT
        rowid AS row_id,
        hash(group_id, provider, backend) AS series
    FROM runs
    WHERE status = 'passed' AND value > 0
),

followed AS (
    SELECT
        row_id,
        series,
        lag(series) OVER () AS series_before
    FROM keyed
),

blocks AS MATERIALIZED (
    SELECT row_id
    FROM followed
    WHERE series_before IS DISTINCT FROM series
),

share_starts AS (
    SELECT min(row_id) AS cut
    FROM blocks
    GROUP BY row_id // $range_rows
)

SELECT
    (SELECT count(*) FROM blocks) AS n_blocks,
    (SELECT count(DISTINCT series) FROM keyed) AS n_series,
    coalesce((SELECT list_sort(list(cut))[2:] FROM share_starts), []) AS bounds
