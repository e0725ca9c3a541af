-- What the history holds of each kernel a contender ran, on the GPUs it ran
-- on (the registered `contender_series`), so a `no baseline` line can say
-- what there is instead: per (kernel, gpu_name, backend), how many
-- workloads, a few of them by name, the newest run and its Liger version.
-- Every stream and pass counts; only passed runs do.
WITH wanted AS (
    SELECT DISTINCT
        kernel,
        gpu_name
    FROM contender_series
),

held AS (
    SELECT
        r.kernel,
        r.gpu_name,
        r.backend,
        r.workload_slug,
        r.observed_at,
        r.liger_version
    FROM runs AS r
    SEMI JOIN wanted AS w ON r.kernel = w.kernel AND r.gpu_name = w.gpu_name
    WHERE r.status = 'passed'
)

SELECT
    kernel,
    gpu_name,
    backend,
    count(DISTINCT workload_slug) AS workloads,
    list_slice(list_sort(list_distinct(list(workload_slug))), 1, 3) AS examples,
    max(observed_at) AS newest,
    arg_max(liger_version, observed_at) AS liger_version
FROM held
GROUP BY kernel, gpu_name, backend
ORDER BY kernel, gpu_name, backend
