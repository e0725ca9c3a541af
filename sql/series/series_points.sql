-- The points of every series (SPEC section 8), series after series in the
-- order of sql/series/series.sql: what pipelines/series reads to compute
-- series_noise and change_points. Only the value, the commit and the run's
-- rowid (for joining back) per point: a series' own columns are read once, by
-- series.sql.
-- commit: the benchmarked commit where the run came from a CI folder, else the
-- data commit of the snapshot that first carried it, else (a plain file) that
-- snapshot's id: two points with one commit are reruns of the same code.
-- Order: by the commit's place in upstream's main where the warehouse can tell
-- it, else when it was run. The warehouse holds no first-parent history of
-- main (only the data commits, which are the data stream's snapshots), so a
-- benchmarked commit is placed at the earliest of: its first run anywhere in
-- the warehouse (upstream's weekly CI benchmarks main's head, so a commit's
-- first benchmark is close to its place in main), and the commit time of a
-- data snapshot whose commit it abbreviates. This puts every rerun of one
-- commit (0a62700 and 0a62700-v0.6.4, a folder rewritten weeks later on
-- another GPU) at the commit's place; `commit_at` is also returned, for
-- tests and the bench. A run of no benchmarked commit is placed when it ran.
WITH commit_first AS (
    SELECT
        benchmarked_commit,
        min(observed_at) AS first_run
    FROM runs
    WHERE benchmarked_commit IS NOT NULL
    GROUP BY benchmarked_commit
),

placed AS (
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
)

SELECT
    runs.value::DOUBLE AS value,
    coalesce(runs.benchmarked_commit, first_seen."commit", runs.first_seen_snapshot) AS "commit",
    runs.rowid AS row_id,
    coalesce(placed.commit_at, runs.observed_at) AS commit_at
FROM runs
LEFT JOIN snapshots AS first_seen ON runs.first_seen_snapshot = first_seen.snapshot_id
LEFT JOIN placed ON runs.benchmarked_commit = placed.benchmarked_commit
WHERE runs.status = 'passed' AND runs.value > 0
ORDER BY
    runs.group_id,
    runs.provider,
    runs.backend,
    coalesce(placed.commit_at, runs.observed_at),
    history_key(runs.observed_at, runs.rowid)
