-- Where the warehouse holds history of the contender's kernels (any pass,
-- metric or provider): each (gpu_name, backend) with a passed run of one of
-- them. A contender GPU missing here gets `no baseline` everywhere and its
-- message names the GPUs that have the history (SPEC section 9: never across
-- GPUs); a backend missing here is named too (it comes from the file's name).
WITH contender_kernels AS (
    SELECT DISTINCT kernel
    FROM contender_series
)

SELECT DISTINCT
    r.gpu_name,
    r.backend
FROM runs AS r
SEMI JOIN contender_kernels AS k ON r.kernel = k.kernel
WHERE r.status = 'passed'
ORDER BY r.gpu_name, r.backend
