-- The series of candidate_series.sql (stored as series_candidates) in a
-- range of groups, from $lo and before $hi (null: no bound), in series order.
SELECT *
FROM series_candidates
WHERE ($lo IS NULL OR group_id >= $lo) AND ($hi IS NULL OR group_id < $hi)
ORDER BY series_number
