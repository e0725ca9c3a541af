-- Every comparable group's passed runs summed up: how many, when first and
-- last observed, their least, median and greatest value; read by
-- comparable_groups, of which it is one part.
-- Its own statement, made one range of groups at a time ($lo and $hi, as the
-- series read them) into a temporary table (database_build): DuckDB keeps
-- every value of every group for a median and cannot spill them, and beside
-- comparable_groups' joins they did not fit its memory (640 MB at 10M runs).
SELECT
    group_id,
    count(*) AS n_runs,
    min(observed_at) AS first_observed,
    max(observed_at) AS last_observed,
    min(value) AS min_value,
    median(value) AS median_value,
    max(value) AS max_value
FROM runs
WHERE status = 'passed' AND group_in_range(group_id, $lo, $hi)
GROUP BY group_id
