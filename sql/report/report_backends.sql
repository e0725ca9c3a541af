-- The backends each provider's passed runs were written for, per kernel, pass,
-- metric and GPU: what the report names a scorecard row's implementation and
-- baseline by while kernel_scorecard has no backend columns of its own.
-- Choice: several backends are joined with `+` in name order (`cutile+triton`),
-- so a row that mixes two implementations says so.
SELECT
    kernel,
    pass,
    metric,
    gpu_name,
    provider,
    string_agg(DISTINCT backend, '+' ORDER BY backend) AS backends
FROM runs
WHERE status = 'passed'
GROUP BY kernel, pass, metric, gpu_name, provider
