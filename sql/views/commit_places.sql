-- Each benchmarked commit (a CI folder's commit of main) with its place in
-- upstream's main as far as the warehouse can tell it: the earliest of its
-- first run anywhere in the warehouse and the commit time of a data snapshot
-- whose commit it abbreviates. Series are ordered by it (change points and the
-- verdict's level), so reruns of one commit sit at the commit's place.

-- The warehouse holds no first-parent history of main, only the data commits
-- (the data stream's snapshots); upstream's weekly CI benchmarks main's head,
-- so a commit's first benchmark is close to its place in main.
WITH commit_first AS (
    SELECT
        benchmarked_commit,
        min(observed_at) AS first_run
    FROM runs
    WHERE benchmarked_commit IS NOT NULL
    GROUP BY benchmarked_commit
)

SELECT
    cf.benchmarked_commit,
    least(cf.first_run, min(data_commit.committed_at)) AS commit_at
FROM commit_first AS cf
LEFT JOIN snapshots AS data_commit
    ON
        data_commit.stream = 'data'
        AND length(cf.benchmarked_commit) >= 7
        AND starts_with(data_commit."commit", cf.benchmarked_commit)
GROUP BY cf.benchmarked_commit, cf.first_run
