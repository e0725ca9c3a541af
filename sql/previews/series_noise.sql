-- The $n noisiest series with their own estimate, and how each series' noise was found.
SELECT
    noise.method,
    run.kernel,
    run.pass,
    run.metric,
    run.gpu_name,
    run.workload_slug,
    noise.provider,
    noise.backend,
    noise.n_points,
    noise.noise,
    noise.window_noise
FROM series_noise AS noise
INNER JOIN comparable_groups AS run USING (group_id)
ORDER BY noise.n_differences = 0 ASC, noise.noise DESC, noise.group_id ASC, noise.provider ASC, noise.backend ASC
LIMIT $n
