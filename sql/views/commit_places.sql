-- Each benchmarked commit (a CI folder's commit of main) with its place in
-- upstream's main, as a time (`commit_at`) that orders the series (change
-- points and the verdict's level), so reruns of one commit sit at the commit's
-- place.

-- Where the data stream's branch (main) holds the commit (the sync records it
-- on its CI snapshots: snapshots.main_position, by its id or by an
-- Upstream-Commit trailer naming it), main's first-parent order decides: the
-- commit's time in main, raised to the latest time of a commit before it on
-- that line, so that the times follow the positions. Elsewhere (a copy of main
-- that lacks the commit, a commit of a fork), the warehouse can only tell it by
-- when it was benchmarked: the earliest of its first run anywhere in the
-- warehouse and the commit time of a data snapshot whose commit it abbreviates
-- (upstream's weekly CI benchmarks main's head, so a commit's first benchmark
-- is close to its place in main).
WITH commit_first AS (
    SELECT
        benchmarked_commit,
        min(observed_at) AS first_run
    FROM runs
    WHERE benchmarked_commit IS NOT NULL
    GROUP BY benchmarked_commit
),

in_main AS (
    SELECT
        benchmarked_commit,
        min(main_position) AS main_position,
        min(main_committed_at) AS main_committed_at
    FROM snapshots
    WHERE stream = 'ci' AND main_position IS NOT NULL
    GROUP BY benchmarked_commit
),

main_order AS (
    SELECT
        benchmarked_commit,
        main_position,
        max(main_committed_at) OVER (
            ORDER BY main_position ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS main_at
    FROM in_main
),

by_benchmark AS (
    SELECT
        cf.benchmarked_commit,
        least(cf.first_run, min(data_commit.committed_at)) AS benchmarked_at
    FROM commit_first AS cf
    LEFT JOIN snapshots AS data_commit
        ON
            data_commit.stream = 'data'
            AND length(cf.benchmarked_commit) >= 7
            AND starts_with(data_commit."commit", cf.benchmarked_commit)
    GROUP BY cf.benchmarked_commit, cf.first_run
)

SELECT
    bb.benchmarked_commit,
    coalesce(mo.main_at, bb.benchmarked_at) AS commit_at,
    mo.main_position
FROM by_benchmark AS bb
LEFT JOIN main_order AS mo ON bb.benchmarked_commit = mo.benchmarked_commit
