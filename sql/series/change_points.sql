-- change_points (SPEC section 8): one row per persistent shift in a series:
-- the last run before and the first run after the shift, the median levels of
-- the two segments, the confidence and the likely cause. ratio = before_value
-- / after_value (above 1: the newer runs are faster or leaner), so verdict is
-- improved above 1 and regressed below; only latency and memory series are searched (the only
-- metrics with a direction). before_commit / after_commit: the benchmarked
-- commits where known, else the data commits that first carried the runs
-- (series_points.sql's commit). status: confirmed, or candidate for a step
-- with fewer than three commits after it (the newest one or two: the next
-- runs confirm or refute it). below_min_effect: the step moves the level by
-- less than the practical minimum effect (pipelines/core/effect.py, 5%): kept
-- here, not drawn as a change. Stored in series order, then time.

-- pipelines/series/change_points.py finds the shifts (change_point_rows: the
-- series, the rowids of the runs around each, the segments' medians, confidence
-- and cause); this joins them back to runs for what a reader wants beside them.
WITH found AS (
    SELECT
        found.*,
        found.before_value / found.after_value AS ratio
    FROM change_point_rows AS found
)

SELECT
    found.group_id,
    found.provider,
    found.backend,
    after_run.kernel,
    after_run.pass,
    after_run.metric,
    after_run.gpu_name,
    after_run.workload_slug,
    before_run.run_id AS before_run_id,
    after_run.run_id AS after_run_id,
    found.before_commit,
    found.after_commit,
    found.before_value,
    found.after_value,
    after_run.unit,
    found.ratio,
    CASE WHEN found.ratio > 1 THEN 'improved' ELSE 'regressed' END AS verdict,
    found.cause,
    found.confidence,
    after_run.observed_at,
    found.n_before,
    found.n_after,
    found.noise,
    found.status,
    found.below_min_effect
FROM found
INNER JOIN runs AS before_run ON found.before_row = before_run.rowid
INNER JOIN runs AS after_run ON found.after_row = after_run.rowid
ORDER BY found.group_id, found.provider, found.backend, after_run.observed_at
