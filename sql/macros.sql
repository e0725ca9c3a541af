-- Rules shared by the statistics, each written once. They are stored in
-- warehouse.duckdb, so ad hoc queries can use them too, for example
-- `SELECT human_value(value, unit), human_unit(unit) FROM runs`.

-- Latency (ns) and memory (bytes) are lower-is-better; other metrics keep
-- their raw unit and have no known direction, so they get no ratio.
CREATE OR REPLACE MACRO lower_is_better(unit) AS unit IN ('ns', 'bytes');

-- Above 1: `value` is better than `reference`. Null when the direction is
-- unknown or a value is not positive (a ratio to zero means nothing).
CREATE OR REPLACE MACRO improvement_ratio(reference, value, unit) AS (
    CASE WHEN lower_is_better(unit) AND reference > 0 AND value > 0 THEN reference / value END
);

-- The geometric mean of positive ratios (an aggregate), the same to the last
-- bit in whatever order the rows reach it: the logs are summed in ascending
-- order. exp(avg(ln(ratio))) sums them in the order the rows come, which a
-- parallel plan or another row-group layout of runs changes.
CREATE OR REPLACE MACRO ordered_geomean(ratio) AS exp(list_avg(list_sort(list(ln(ratio)))));

-- Two runs are separated when their [p20, p80] intervals do not overlap.
CREATE OR REPLACE MACRO intervals_separated(p20, p80, other_p20, other_p80) AS (
    p80 < other_p20 OR p20 > other_p80
);

-- A run's noise from its own quantiles, as the sigma of a log-normal: p20 and
-- p80 sit 0.8416 sigma either side of the median, hence 2 x 0.8416 = 1.683.
CREATE OR REPLACE MACRO log_normal_sigma(p20, p80) AS (
    CASE WHEN p20 > 0 AND p80 >= p20 THEN (ln(p80) - ln(p20)) / 1.683 END
);

-- Exact two-sided sign test: p = 2 * P(X <= min(better, worse)) for
-- X ~ Binomial(better + worse, 1/2), capped at 1; ties are left out by the
-- caller, as the sign test does. Binomial coefficients come from lgamma,
-- rounded back to the integers they are (exact up to about 50 points).
CREATE OR REPLACE MACRO sign_test_p(better, worse) AS (
    CASE WHEN better + worse > 0 THEN least(
        1.0,
        2 * list_sum([
            round(exp(lgamma(better + worse + 1) - lgamma(i + 1) - lgamma(better + worse - i + 1)))
            FOR i IN range(0, least(better, worse) + 1)
        ]) / pow(2, better + worse)
    ) END
);

-- Human units: ms for latency, MiB for memory, anything else as stored.
CREATE OR REPLACE MACRO human_value(value, unit) AS (
    CASE unit WHEN 'ns' THEN value / 1e6 WHEN 'bytes' THEN value / 1048576 ELSE value END
);

CREATE OR REPLACE MACRO human_unit(unit) AS (
    CASE unit WHEN 'ns' THEN 'ms' WHEN 'bytes' THEN 'MiB' ELSE unit END
);

-- Which end of a preview a ratio belongs to, and how far out it is there:
-- previews keep the rows farthest from 1 on each side.
CREATE OR REPLACE MACRO side(ratio) AS (
    CASE WHEN ratio > 1 THEN 'win' WHEN ratio < 1 THEN 'regression' END
);

CREATE OR REPLACE MACRO distance_from_par(ratio) AS abs(ln(ratio));

-- The order of a (group, provider)'s runs, (observed_at, run_id), as one
-- number: runs is stored in run_id order (database_build loads it so), so its
-- rowid stands for run_id, and a HUGEINT compares far faster than a struct.
-- observed_at is never null: a row without a timestamp is quarantined.
CREATE OR REPLACE MACRO history_key(observed_at, row_id) AS (
    epoch_us(observed_at)::HUGEINT * 1099511627776 + row_id
);

-- A group inside a range of groups read one range at a time: from `lo` and
-- before `hi`, a null bound being no bound.
CREATE OR REPLACE MACRO group_in_range(group_id, lo, hi) AS (
    (lo IS NULL OR group_id >= lo) AND (hi IS NULL OR group_id < hi)
);
