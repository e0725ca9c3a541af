-- The $n noisiest runs, with the implementation (provider and backend) each measured.
SELECT
    run_noise.run_id,
    run_noise.provider,
    run_noise.backend,
    human_value(run_noise.p20, run_noise.unit) AS p20,
    human_value(run_noise.value, run_noise.unit) AS value,
    human_value(run_noise.p80, run_noise.unit) AS p80,
    human_unit(run_noise.unit) AS unit,
    run_noise.sigma_log
FROM run_noise
WHERE run_noise.sigma_log IS NOT NULL
ORDER BY run_noise.sigma_log DESC, run_noise.run_id ASC
LIMIT $n
