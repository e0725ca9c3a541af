-- Each run's own noise: sigma_log = (ln p80 - ln p20) / 1.683, the sigma of a
-- log-normal with those quantiles (0.05 is about a 5% spread).
-- Every run has a row, failed ones too, so it joins one to one with runs;
-- sigma_log is null where p20 or p80 is missing, not positive, or p80 < p20.
-- backend beside provider: the run's implementation (SPEC section 4).

-- A view over runs, not a copy: it is a few columns of runs and one
-- expression, as fast to compute on read as a stored copy is to scan.
SELECT
    run_id,
    group_id,
    provider,
    backend,
    status,
    value,
    p20,
    p80,
    unit,
    log_normal_sigma(p20, p80) AS sigma_log
FROM runs
