-- Every group's runs share kernel, pass, metric, workload, GPU, protocol and
-- environment, failed runs included. Each row is a group whose runs don't.
SELECT
    'comparable_groups' AS table_name,
    group_id,
    count(DISTINCT kernel) AS kernels,
    count(DISTINCT pass) AS passes,
    count(DISTINCT metric) AS metrics,
    count(DISTINCT workload_digest) AS workloads,
    count(DISTINCT gpu_name) AS gpus,
    count(DISTINCT protocol_digest) AS protocols,
    count(DISTINCT environment_digest) AS environments
FROM runs
GROUP BY group_id
HAVING greatest(kernels, passes, metrics, workloads, gpus, protocols, environments) > 1
ORDER BY group_id
