"""`python -m bench.verdict [--bundle PATH] [--cache DIR]`: the verdict as a gate, leave-one-week-out on upstream's CI.

The warehouse is built once from the whole upstream bundle (both streams, the project's own ingest and
database build, cached under --cache). Each CI week W is a folder of the bundle's gh-pages
(`benchmarks/<commit>[-v<version>]/benchmark.csv`), its runs those of the first snapshot that carried it,
at the time that snapshot was committed. W's history is every run first seen in a snapshot committed
before W (either stream), W's own runs left out. On that history, in memory, what the database build and
the verdict would compute from a warehouse holding just it:
- the series' order: the view `commit_places` itself (sql/views/commit_places.sql, run in DuckDB over the
  history's runs and the snapshots committed before W: main's first-parent order where main holds the
  commit, else when it was first benchmarked), other runs at their own time; reruns of one commit are one
  point;
- the series' noise (pipelines.series.series_noise.noise_arrays over every series, window spread included, as
  pipelines/series/series_tables.py calls it), then the verdict's (pipelines/verdict/verdict_noise.py: pooled, the
  level's window, short series unknown);
- the change points of each of W's series (pipelines.series.change_points.detect_runs, on the series
  tables.candidates would search), and the segment after the newest *confirmed* one (as
  sql/verdict/segments.sql: a candidate starts no segment);
- the verdict itself, through pipelines.verdict.against_history.judge_frames, the function the command uses
  (launch-bound runs, the level, the rules per run and per kernel, the few-sizes and failed-run rules).
Beside it, two simple rules on the same history, per run and then per kernel (a kernel is slower when more
than half of its runs with a history are):
- z-score: the run's ln value is more than 5 standard deviations above the mean of its series' last 10
  points;
- 10%: the run is 10% slower than its series' newest point (upstream's dashboard rule).

Ground truth: a (kernel, W) pair (kernel, pass, metric, provider, backend, GPU) is a real step when the
FULL history's `change_points` table holds a `regressed` change point of one of its series, not
`below_min_effect`, that W is the first CI week to show: W's benchmarked commit is the earliest benchmarked
of those commit_places puts at or after the step's first commit (that commit itself, unless an older commit
was benchmarked later, a backfill); `confirmed` and `candidate` both
count (the candidates sit at the newest weeks, which the full history cannot confirm yet). A rule catches
a real step when it calls that kernel slower in W; a kernel it calls slower that is no real step is a
false alarm.

The bar is also reported on the real steps that are not launch-bound (most of the contender's runs of the
kernel launch-bound by its own sweep), which issue 28 asks the verdict to call inconclusive.

The weeks are split in time: the first half is where the rules' constants were chosen, the second half
was not looked at while choosing them; both are reported, and the totals.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.core import settings, sql_files
from pipelines.series import change_points as detection
from pipelines.series import series_noise, series_tables
from pipelines.verdict import judge, verdict_noise
from pipelines.verdict.against_history import judge_frames

BUNDLE = settings.PROJECT_ROOT.parent / "shared" / "liger-data" / "liger-upstream.bundle"
CACHE = Path(tempfile.gettempdir()) / "liger-bench-verdict"
FILE_GLOB = "benchmark/data/all_benchmark_data*.csv"
Z_LIMIT, Z_POINTS = 5.0, 10
TEN_PERCENT = 1.10
KERNEL = judge.KERNEL_KEY
SERIES = judge.SERIES
# What the command's contender carries that the rules read (pipelines/verdict/contender.py's COLUMNS).
CONTENDER_COLUMNS = (*KERNEL, "group_id", "workload_slug", "unit", "value", "run_id", "sweep_digest", "x_name", "x_value")

POINTS_SQL = """
WITH first_seen AS (
    SELECT rs.run_id, min(s.committed_at) AS known_at
    FROM run_snapshots AS rs
    INNER JOIN snapshots AS s USING (snapshot_id)
    GROUP BY rs.run_id
)
SELECT
    r.run_id, r.group_id, r.provider, r.backend, r.kernel, r.pass, r.metric, r.gpu_name, r.workload_slug, r.unit,
    r.sweep_digest, r.x_name, r.x_value,
    r.value::DOUBLE AS value,
    coalesce(r.benchmarked_commit, fs."commit", r.first_seen_snapshot) AS "commit",
    r.benchmarked_commit,
    r.observed_at,
    r.rowid AS row_id,
    f.known_at
FROM runs AS r
INNER JOIN first_seen AS f USING (run_id)
LEFT JOIN snapshots AS fs ON r.first_seen_snapshot = fs.snapshot_id
WHERE r.status = 'passed' AND r.value > 0
"""
# What the view commit_places reads, cut to a week's history before it runs: every run (of any status) with
# when it was first seen, and the snapshots.
PLACES_RUNS_SQL = """
SELECT r.run_id, r.benchmarked_commit, r.observed_at, min(s.committed_at) AS known_at
FROM runs AS r
INNER JOIN run_snapshots AS rs USING (run_id)
INNER JOIN snapshots AS s USING (snapshot_id)
GROUP BY r.run_id, r.benchmarked_commit, r.observed_at
"""
PLACES_SNAPSHOTS_SQL = "SELECT * FROM snapshots"
WEEKS_SQL = """
SELECT source_file, snapshot_id, committed_at, benchmarked_commit
FROM snapshots
WHERE stream = 'ci'
QUALIFY row_number() OVER (PARTITION BY source_file ORDER BY committed_at, snapshot_id) = 1
ORDER BY committed_at, source_file
"""
WEEK_RUNS_SQL = "SELECT snapshot_id, run_id FROM run_snapshots WHERE snapshot_id IN (SELECT snapshot_id FROM snapshots WHERE stream = 'ci')"
# A step is due at the first CI week that could show it: the earliest-benchmarked commit placed (commit_places)
# at or after the step's first commit. With commits benchmarked in main's order that is the step's own first
# commit; an older commit benchmarked later (a backfill) that main's order places after the step's start moves
# the step to it, but the week that first showed the step, benchmarked before it, is where a gate could see it.
STEPS_SQL = """
WITH week_places AS (
    SELECT w.benchmarked_commit, min(w.committed_at) AS week_at, any_value(p.commit_at) AS commit_at
    FROM snapshots AS w
    INNER JOIN commit_places AS p USING (benchmarked_commit)
    WHERE w.stream = 'ci'
    GROUP BY w.benchmarked_commit
),
steps AS (
    SELECT DISTINCT c.kernel, c.pass, c.metric, c.provider, c.backend, c.gpu_name, c.after_commit, p.commit_at AS step_at
    FROM change_points AS c
    LEFT JOIN commit_places AS p ON c.after_commit = p.benchmarked_commit
    WHERE c.verdict = 'regressed' AND NOT coalesce(c.below_min_effect, false)
)
SELECT DISTINCT
    s.kernel, s.pass, s.metric, s.provider, s.backend, s.gpu_name,
    coalesce(
        (SELECT w.benchmarked_commit FROM week_places AS w WHERE w.commit_at >= s.step_at ORDER BY w.week_at LIMIT 1),
        s.after_commit
    ) AS after_commit
FROM steps AS s
"""


def build(bundle: Path, cache: Path) -> Path:
    """warehouse.duckdb's folder built from the whole bundle (both streams), reused when already there."""
    from pipelines.assemble.tables_build import build_tables
    from pipelines.ingest.steps import stage_new, sync
    from pipelines.statistics import database_build
    from pipelines.storage import store

    target = cache / "warehouse"
    if (target / "warehouse.duckdb").is_file():
        return target
    source = settings.for_source(str(bundle), "main", FILE_GLOB, cache / "cache", streams=("data", "ci"))
    with store.writer_lock(target):
        listing = sync(target, source)
        stage_new(target, source, listing)
        build_tables(target, listing)
    database_build.build_database(target, settings.DEFAULT_BASELINES)
    return target


@dataclass(frozen=True)
class History:
    points: pl.DataFrame  # every passed run with known_at and codes (series, pools, commit)
    weeks: pl.DataFrame  # source_file, snapshot_id, committed_at, benchmarked_commit, in time order
    week_runs: pl.DataFrame  # snapshot_id, run_id
    steps: pl.DataFrame  # the full history's regressed change points at or above the minimum effect: KERNEL + after_commit
    place_runs: pl.DataFrame  # every run: run_id, benchmarked_commit, observed_at, known_at (what commit_places reads)
    snapshots: pl.DataFrame  # the snapshots table (what commit_places reads)


def read(warehouse: Path) -> History:
    import duckdb

    with duckdb.connect(str(warehouse / "warehouse.duckdb"), read_only=True) as con:
        points = con.sql(POINTS_SQL).pl()
        weeks = con.sql(WEEKS_SQL).pl()
        week_runs = con.sql(WEEK_RUNS_SQL).pl()
        steps = con.sql(STEPS_SQL).pl()
        place_runs = con.sql(PLACES_RUNS_SQL).pl()
        snapshots = con.sql(PLACES_SNAPSHOTS_SQL).pl()
    points = points.with_columns(
        pl.struct(SERIES).rank("dense").cast(pl.Int64).sub(1).alias("sid"),
        pl.struct("kernel", "pass", "metric", "gpu_name", "provider", "backend").rank("dense").cast(pl.Int64).alias("pool"),
        pl.struct("metric", "gpu_name").rank("dense").cast(pl.Int64).alias("metric_pool"),
        pl.col("commit").rank("dense").cast(pl.Int64).alias("commit_code"),
    )
    return History(points, weeks, week_runs, steps, place_runs, snapshots)


def commit_places(runs: pl.DataFrame, snapshots: pl.DataFrame) -> pl.DataFrame:
    """benchmarked_commit, commit_at: the view commit_places (sql/views/commit_places.sql, the one ordering) run
    in DuckDB over `runs` and `snapshots` standing for the warehouse's tables of those names."""
    import duckdb

    with duckdb.connect() as con:
        con.register("runs", runs)
        con.register("snapshots", snapshots)
        return con.sql(sql_files.text("views/commit_places")).pl().select("benchmarked_commit", "commit_at")


def placed(history: pl.DataFrame, places: pl.DataFrame) -> pl.DataFrame:
    """`history` with `order`: its benchmarked commit's `commit_at` in `places` (commit_places), else the run's
    own time, sorted series after series as sql/series/series_points.sql sorts them (order, then observed_at and
    rowid)."""
    frame = history.join(places, on="benchmarked_commit", how="left").with_columns(pl.coalesce("commit_at", "observed_at").alias("order"))
    return frame.drop("commit_at").sort("sid", "order", "observed_at", "row_id")


def noise_of(history: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the statistic series_noise: SERIES, unit, noise (NaN unknown), method, the table the build writes;
    the verdict's noise.SCHEMA from it, as sql/verdict/series_noise.sql and noise.pooled read it), for every
    series of `history` (sorted series after series, `placed`)."""
    sids, series_of = np.unique(history["sid"].to_numpy(), return_inverse=True)
    firsts = history.group_by("sid", maintain_order=True).first()
    found = series_noise.noise_arrays(
        series_of,
        np.log(history["value"].to_numpy()),
        history["commit_code"].to_numpy(),
        np.unique(firsts["pool"].to_numpy(), return_inverse=True)[1],
        np.unique(firsts["metric_pool"].to_numpy(), return_inverse=True)[1],
    )
    counts = np.bincount(series_of, minlength=len(sids))
    table = firsts.select(*SERIES, "kernel", "pass", "metric", "gpu_name", "unit").with_columns(
        pl.Series("n_points", counts, pl.Int64),
        pl.Series("n_pairs", np.maximum(counts - 1, 0), pl.Int64),
        pl.Series("noise", found.noise, pl.Float64).fill_nan(None),
        pl.Series("method", [series_noise.METHODS[m] for m in found.method], pl.String),
    )
    return table, verdict_noise.pooled(table.select(verdict_noise.SCHEMA.names()))


def segment_starts(history: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """SERIES, segment_start: the order of the first run after each series' newest confirmed change point, found
    on `history` alone (`placed`) with the series' own noise (`table`, noise_of's first) as the build finds them:
    only the series pipelines/series/tables.candidates searches, pipelines.series.change_points.detect_runs."""
    rows = []
    known = {(g, p, b): n for g, p, b, n in table.select(*SERIES, "noise").iter_rows()}
    directed = history.filter(pl.col("unit").is_in(series_tables.DIRECTED_UNITS))
    for key, group in directed.group_by(SERIES, maintain_order=True):
        sigma = known.get(key)
        values = group["value"].to_numpy()
        if sigma is None or len(values) < 1 + detection.MIN_AFTER:
            continue
        logs = np.log(values)
        if not logs.max() - logs.min() >= detection.MIN_SHIFT_NOISES * sigma:
            continue  # too narrow to hold a step (pipelines.series.series_tables.candidates)
        steps = [
            s for s in detection.detect_runs(values.tolist(), group["commit_code"].to_list(), sigma) if s.status == detection.CONFIRMED
        ]
        if steps:
            rows.append((*key, group["order"][steps[-1].after]))
    return pl.DataFrame(rows, schema={**dict.fromkeys(SERIES, pl.String), "segment_start": history.schema["order"]}, orient="row")


def simple_rules(history: pl.DataFrame, contender: pl.DataFrame) -> pl.DataFrame:
    """Per kernel of the contender: z_slower and ten_slower, the two simple rules' kernel verdicts (module)."""
    recent = history.group_by(SERIES, maintain_order=True).agg(
        pl.col("value").log().tail(Z_POINTS).mean().alias("mean"),
        pl.col("value").log().tail(Z_POINTS).std().alias("sd"),
        pl.col("value").last().alias("previous"),
    )
    runs = contender.filter(pl.col("unit").is_in(judge.LOWER_IS_BETTER)).join(recent, on=SERIES)
    z = (pl.col("value").log() - pl.col("mean")) / pl.col("sd")
    runs = runs.with_columns(
        (pl.col("sd").is_not_null() & (pl.col("sd") > 0) & (z > Z_LIMIT)).alias("z_run"),
        (pl.col("value") > TEN_PERCENT * pl.col("previous")).alias("ten_run"),
    )
    # Each rule's kernel score: the kernel is slower at a limit L exactly when its score exceeds L (more than half
    # of its runs beyond L is the (n // 2 + 1)-th largest run beyond it), so one pass serves every limit.
    valid_z = pl.when(pl.col("sd").is_not_null() & (pl.col("sd") > 0)).then(z).otherwise(-math.inf)
    return runs.group_by(KERNEL).agg(
        (pl.col("z_run").sum() * 2 > pl.len()).alias("z_slower"),
        (pl.col("ten_run").sum() * 2 > pl.len()).alias("ten_slower"),
        valid_z.sort(descending=True).get(pl.len() // 2).alias("z_score"),
        (pl.col("value") / pl.col("previous")).sort(descending=True).get(pl.len() // 2).alias("ten_score"),
    )


def week_of(data: History, name: str) -> dict:
    """The week whose folder is `name` (`benchmarks/<name>/benchmark.csv`)."""
    (week,) = [w for w in data.weeks.iter_rows(named=True) if w["source_file"].split("/")[-2] == name]
    return week


def week_runs(data: History, week: dict) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the week's runs: the contender; its history: every run first seen before the week, its runs left out,
    `placed` as a warehouse of just that history would order it)."""
    runs = data.week_runs.filter(pl.col("snapshot_id") == week["snapshot_id"])["run_id"]
    contender = data.points.filter(pl.col("run_id").is_in(runs.implode())).sort("row_id")
    before = week["committed_at"]
    history = data.points.filter((pl.col("known_at") < before) & ~pl.col("run_id").is_in(runs.implode()))
    # What a warehouse holding just this history would hold: its runs, of any status, and the snapshots before W.
    place_runs = data.place_runs.filter((pl.col("known_at") < before) & ~pl.col("run_id").is_in(runs.implode()))
    places = commit_places(place_runs, data.snapshots.filter(pl.col("committed_at") < before))
    return contender, placed(history, places)


def judge_history(
    history: pl.DataFrame, contender: pl.DataFrame, min_effect: float = judge.MIN_EFFECT
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(runs, kernels): the verdict (pipelines.verdict.against_history.judge_frames) with `history` (`placed`) as the warehouse."""
    table, noise = noise_of(history)
    mine = history.join(contender.select(SERIES).unique(), on=SERIES, how="semi")
    starts = segment_starts(mine, table)
    points = mine.select(*SERIES, "value", "commit", "order")
    runs = contender.select(*CONTENDER_COLUMNS)
    return judge_frames(runs, points, starts, noise, min_effect, settings.DEFAULT_BASELINES)


def judge_week(data: History, week: dict, min_effect: float) -> dict:
    """One week judged by the verdict and the two simple rules, with the full history's steps at its commit."""
    contender, history = week_runs(data, week)
    runs, kernels = judge_history(history, contender, min_effect)
    mine = history.join(contender.select(SERIES).unique(), on=SERIES, how="semi")
    kernels = kernels.join(simple_rules(mine, contender), on=KERNEL, how="left").join(launch_bound_kernels(runs), on=KERNEL, how="left")
    commit = week["benchmarked_commit"]
    real = data.steps.filter(pl.col("after_commit") == commit).select(KERNEL).unique()
    kernels = kernels.join(real.with_columns(pl.lit(True).alias("real")), on=KERNEL, how="left").with_columns(
        pl.col("real").fill_null(False),
        pl.col("z_slower").fill_null(False),
        pl.col("ten_slower").fill_null(False),
        pl.col("launch_bound").fill_null(False),
    )
    verdict_slower = pl.col("verdict") == "slower"
    gate_slower = verdict_slower & pl.col("gates")
    row = {
        "week": week["source_file"].split("/")[-2],
        "real": real.height,
        "real_gate": kernels.filter(pl.col("real") & pl.col("gates")).height,
    }
    rules = (
        ("verdict", verdict_slower),
        ("gate", gate_slower),
        ("z", pl.col("z_slower")),
        ("z_gate", pl.col("z_slower") & pl.col("gates")),
        ("ten", pl.col("ten_slower")),
        ("ten_gate", pl.col("ten_slower") & pl.col("gates")),
    )
    for name, called in rules:
        row[f"{name}_alarms"] = kernels.filter(called).height
        row[f"{name}_false"] = kernels.filter(called & ~pl.col("real")).height
        row[f"{name}_caught"] = kernels.filter(called & pl.col("real")).height
    # The bar without the steps issue 28 asks to call inconclusive: kernels whose points are launch-bound.
    free = pl.col("real") & pl.col("gates") & ~pl.col("launch_bound")
    row["real_gate_free"] = kernels.filter(free).height
    row["gate_caught_free"] = kernels.filter(free & gate_slower).height
    row["z_gate_caught_free"] = kernels.filter(free & pl.col("z_slower")).height
    row["inconclusive"] = kernels.filter(pl.col("verdict") == "inconclusive").height
    row["real_gate_inconclusive"] = kernels.filter(pl.col("real") & pl.col("gates") & (pl.col("verdict") == "inconclusive")).height
    row["kernels"] = kernels.height
    gating = kernels.filter(pl.col("gates"))
    row["scores"] = list(zip(gating["z_score"].to_list(), gating["ten_score"].to_list(), gating["real"].to_list(), strict=True))
    row["false_kernels"] = _names(kernels.filter(gate_slower & ~pl.col("real")))
    row["caught_kernels"] = _names(kernels.filter(gate_slower & pl.col("real")))
    row["z_caught_kernels"] = _names(kernels.filter(pl.col("z_slower") & pl.col("gates") & pl.col("real") & ~gate_slower))
    return row


def launch_bound_kernels(runs: pl.DataFrame) -> pl.DataFrame:
    """KERNEL, launch_bound: most of the kernel's runs are launch-bound by the contender's own sweep (the verdict's
    runs, judge.LAUNCH_BOUND), the points issue 28 asks to call inconclusive whatever a rule says of them."""
    bound = pl.col("reason").fill_null("").str.starts_with(judge.LAUNCH_BOUND.split(":")[0])
    return runs.group_by(KERNEL).agg((bound.sum() * 2 > pl.len()).alias("launch_bound"))


def _names(kernels: pl.DataFrame) -> str:
    return ", ".join(
        f"{r['kernel']}/{r['pass']}/{r['metric']}/{r['provider']}{' [launch-bound]' if r['launch_bound'] else ''}"
        for r in kernels.iter_rows(named=True)
    )


def measure(data: History, min_effect: float) -> pl.DataFrame:
    return pl.DataFrame([judge_week(data, week, min_effect) for week in data.weeks.iter_rows(named=True)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.verdict", description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=BUNDLE, help="the upstream bundle (main and gh-pages)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the warehouse is built once and reused")
    parser.add_argument("--min-effect", type=float, default=judge.MIN_EFFECT, help="the verdict's minimum effect (0.05: 5%%)")
    args = parser.parse_args(argv)
    if not args.bundle.is_file():
        raise SystemExit(f"{args.bundle} does not exist: pass --bundle with the upstream bundle (liger-upstream.bundle)")
    data = read(build(args.bundle, args.cache))
    rows = measure(data, args.min_effect)
    print(markdown(rows))
    print()
    titles = {
        "false": "false gate alarms",
        "caught": "real steps caught (gating)",
        "z_caught": "real steps the z-score caught and the gate did not ([launch-bound] marked)",
    }
    for row in rows.iter_rows(named=True):
        for what, title in titles.items():
            if row[f"{what}_kernels"]:
                print(f"{row['week']}: {title}: {row[f'{what}_kernels']}")
    print()
    print(markdown_totals(rows))
    print()
    print(markdown_limits(rows))


RULES = (
    ("verdict", "verdict, every provider"),
    ("gate", "verdict, gating"),
    ("z", "z-score"),
    ("z_gate", "z-score, gating"),
    ("ten", "10%"),
    ("ten_gate", "10%, gating"),
)


def markdown(rows: pl.DataFrame) -> str:
    """One line per week: real steps (every provider / gating), then per rule kernels called slower / false / caught."""
    header = ["week", "real steps (gating)", *(f"{title}: slower / false / caught" for _, title in RULES), "inconclusive / kernels"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for r in rows.iter_rows(named=True):
        cells = [r["week"], f"{r['real']} ({r['real_gate']})"]
        cells += [f"{r[f'{name}_alarms']} / {r[f'{name}_false']} / {r[f'{name}_caught']}" for name, _ in RULES]
        cells.append(f"{r['inconclusive']} / {r['kernels']}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_totals(rows: pl.DataFrame) -> str:
    """False kernel alarms per week and real steps caught, per rule, on the first half (where the rules were
    chosen), the second half (held out) and all weeks."""
    half = math.ceil(rows.height / 2)
    parts = (("first half (tuned on)", rows.head(half)), ("second half (held out)", rows.tail(rows.height - half)), ("all weeks", rows))
    header = [
        "weeks",
        "real steps (gating)",
        "of them the gate left inconclusive",
        *(f"{title}: false per week / caught" for _, title in RULES),
        "real steps (gating) not launch-bound: verdict, gating / z-score, gating caught",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for name, part in parts:
        cells = [
            f"{name}: {part.height}",
            f"{int(part['real'].sum())} ({int(part['real_gate'].sum())})",
            str(int(part["real_gate_inconclusive"].sum())),
        ]
        cells += [f"{part[f'{rule}_false'].sum() / max(part.height, 1):.2f} / {int(part[f'{rule}_caught'].sum())}" for rule, _ in RULES]
        cells.append(
            f"{int(part['real_gate_free'].sum())}: {int(part['gate_caught_free'].sum())} / {int(part['z_gate_caught_free'].sum())}"
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# The simple rules at stricter limits than their usual ones (5 sigma, 10%), to compare the rules at the same false alarms.
Z_LIMITS = (5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 50.0, 100.0)
TEN_LIMITS = (1.10, 1.20, 1.30, 1.50, 2.0, 3.0)


def markdown_limits(rows: pl.DataFrame) -> str:
    """Gating kernels over all weeks: the simple rules at each limit (false alarms per week / real steps caught)
    against the verdict's, and what each catches at no more false alarms than the verdict raises."""
    scores = [s for week in rows["scores"].to_list() for s in week]
    weeks = max(rows.height, 1)
    gate_false, gate_caught = int(rows["gate_false"].sum()), int(rows["gate_caught"].sum())

    def at(index: int, limit: float) -> tuple[int, int]:
        called = [real for *score, real in scores if score[index] is not None and score[index] > limit]
        return called.count(False), called.count(True)

    lines = ["| rule, gating kernels | false per week / caught |", "| --- | --- |"]
    lines.append(f"| verdict | {gate_false / weeks:.2f} / {gate_caught} |")
    best = {}
    for index, name, limits, shown in ((0, "z-score", Z_LIMITS, "z > {:g}"), (1, "10%", TEN_LIMITS, "slower than x{:g}")):
        for limit in limits:
            false, caught = at(index, limit)
            lines.append(f"| {name}, {shown.format(limit)} | {false / weeks:.2f} / {caught} |")
            if false <= gate_false and caught > best.get(name, (-1, None))[0]:
                best[name] = (caught, shown.format(limit))
    for name in ("z-score", "10%"):
        caught, shown = best.get(name, (0, "no limit above"))
        lines.append(f"| {name} at no more false alarms than the verdict ({gate_false}): {shown} | caught {caught} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
