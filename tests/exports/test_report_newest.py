"""What changed in the newest run (pipelines/exports/report/newest.py), on series written here: the latest run against
the one before it, or against the level before a change point of the newest two runs; beyond the noise and the
minimum effect only; liger first."""

from __future__ import annotations

import datetime as dt

import polars as pl

from pipelines.exports.report.changes_page import commit_label
from pipelines.exports.report.newest import newest_changes

COMMITS = ["c0", "c1", "c2", "c3", "c4"]


def series_rows(provider: str, workload: str, values: list[float], *, kernel: str = "tvd", rerun: bool = False) -> list[dict]:
    rows = []
    for i, (commit, value) in enumerate(zip(COMMITS, values, strict=True)):
        base = {
            "group_id": f"{kernel}-{workload}",
            "kernel": kernel,
            "gpu_name": "H100",
            "pass": "forward",
            "metric": "speed",
            "workload_slug": workload,
            "provider": provider,
            "backend": "triton",
            "benchmarked_commit": commit,
            "release": None,
            "observed_at": dt.datetime(2026, 1, 1 + 7 * i, tzinfo=dt.UTC),
            "value": value,
            "unit": "ms",
            "run_id": f"{provider}/{workload}/{commit}",
        }
        rows.append(base)
        if rerun and i == 3:  # a rerun of c3 an hour later, far off: the commit's median counts
            rows.append(
                {**base, "observed_at": base["observed_at"] + dt.timedelta(hours=1), "value": value * 3, "run_id": base["run_id"] + "r"}
            )
    return rows


def noise_of(frame: pl.DataFrame, sigma: float) -> pl.DataFrame:
    return frame.select("group_id", "provider", "backend").unique().with_columns(pl.lit(sigma).alias("noise"))


def no_change_points() -> pl.DataFrame:
    schema = {"group_id": pl.String, "provider": pl.String, "backend": pl.String, "observed_at": pl.Datetime("us", "UTC")}
    return pl.DataFrame(schema={**schema, "before_value": pl.Float64, "before_commit": pl.String, "below_min_effect": pl.Boolean})


def test_the_newest_point_against_the_previous_beyond_the_noise_liger_first():
    series = pl.DataFrame(
        [
            *series_rows("torch", "w1", [1.0, 1.0, 1.0, 1.0, 2.0]),  # 2x slower
            *series_rows("liger", "w1", [1.0, 1.0, 1.0, 1.0, 1.3]),  # 30% slower: smaller, but liger comes first
            *series_rows("liger", "w2", [1.0, 1.0, 1.0, 1.0, 1.03]),  # 3%: beyond 3 noises, under the minimum effect
            *series_rows("huggingface", "w1", [1.0, 1.0, 1.0, 1.0, 1.1], kernel="rope"),  # within its 5% noise
        ]
    )
    noise = noise_of(series, 0.002).with_columns(
        pl.when(pl.col("provider") == "huggingface").then(0.05).otherwise(pl.col("noise")).alias("noise")
    )
    newest = newest_changes(series, noise, no_change_points(), commit_label)
    assert newest.commit == "c4"
    assert [(m.kernel, m.provider, [round(r, 3) for r in m.ratios], m.workloads, m.against) for m in newest.moved] == [
        ("tvd", "liger", [0.769], 2, ["c3"]),
        ("tvd", "torch", [0.5], 1, ["c3"]),
    ]


def test_reruns_are_one_point_and_a_recent_change_point_sets_the_level_compared_with():
    series = pl.DataFrame(series_rows("liger", "w1", [2.0, 2.0, 2.0, 1.0, 1.0], rerun=True))
    # Against c3 (its two runs' median, 1.0 and 3.0 -> 1.73): 1.73x faster. But a change point came at c3 (after the
    # third newest commit, c2): the newest run is set against the level before it, 2.0.
    change = pl.DataFrame(
        {
            "group_id": ["tvd-w1"],
            "provider": ["liger"],
            "backend": ["triton"],
            "observed_at": [dt.datetime(2026, 1, 22, tzinfo=dt.UTC)],
            "before_value": [2.0],
            "before_commit": ["c2"],
            "below_min_effect": [False],
        }
    )
    without = newest_changes(series, noise_of(series, 0.01), no_change_points(), commit_label)
    assert [round(r, 3) for r in without.moved[0].ratios] == [1.732] and without.moved[0].against == ["c3"]
    with_change = newest_changes(series, noise_of(series, 0.01), change, commit_label)
    assert with_change.moved[0].ratios == [2.0] and with_change.moved[0].against == ["c2"]
    # A series of unknown noise says nothing.
    assert newest_changes(series, noise_of(series, 0.01).clear(), change, commit_label).moved == []


def test_a_series_of_two_points_is_set_against_its_first_and_one_of_one_point_counts_nowhere():
    two = [row for row in series_rows("liger", "w1", [1.0, 1.0, 1.0, 1.0, 2.0]) if row["benchmarked_commit"] in ("c3", "c4")]
    one = [row for row in series_rows("liger", "w2", [1.0, 1.0, 1.0, 1.0, 2.0]) if row["benchmarked_commit"] == "c4"]
    series = pl.DataFrame([*two, *one])
    newest = newest_changes(series, noise_of(series, 0.002), no_change_points(), commit_label)
    assert [(m.provider, m.ratios, m.workloads, m.against) for m in newest.moved] == [("liger", [0.5], 1, ["c3"])]
