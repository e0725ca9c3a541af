-- The GPUs that hold history of the contender's kernels (any pass, metric,
-- provider or backend): a contender GPU missing here gets `no baseline`
-- everywhere, and its message names these (SPEC section 9: never across GPUs).
SELECT DISTINCT r.gpu_name
FROM runs AS r
SEMI JOIN (SELECT DISTINCT kernel FROM contender_series) AS k ON r.kernel = k.kernel
WHERE r.status = 'passed'
ORDER BY r.gpu_name
