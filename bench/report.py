"""The bench's figures: each phase measured, the ratios of issue 17's target table, and the text table."""

from __future__ import annotations

from dataclasses import dataclass

CSV_FLOOR = "floor: polars CSV -> zstd Parquet"
NORMALIZE = "normalize (stage + tables)"
READ_ALONE = "reading the CSV alone"
STORE_ALONE = "storing the tables' rows alone"
BUILD = "statistics (build_database)"
BUILD_COPIES = "build_database, every table copied"
STATS_FLOOR = "floor: DuckDB GROUP BY, 2 quantiles"
STATS_OUTPUT = "storing the statistics' rows alone"
STATS_SQL = "statistics SQL alone"
STATS_SQL_COPIES = "statistics SQL alone, every table copied"
QUERIES = "README queries on warehouse.duckdb"
QUERIES_COPIES = "README queries, every table copied"
SERIES = "series noise and change points (build step)"
SERIES_FLOOR = "floor: reading the series, storing their 2 tables"
DAGSTER_FLOOR = "floor: trivial 3-asset Dagster run"
MATERIALIZE = "materialize real history"
NOOP = "no-change re-run"
HELD_BACK = "materialize, newest CI folder held back"
NEW_FOLDER = "materialize one new CI folder"
# The pipeline's own phases, whose peak RSS the target bounds (floors and references are not the pipeline).
PIPELINE_PHASES = (NORMALIZE, BUILD, MATERIALIZE, NOOP, HELD_BACK, NEW_FOLDER)
# (key, what it is, issue 17's target): one line each, and a JSON key each.
TARGETS = (
    ("normalize_vs_read_store_ratio", "normalization / (reading the CSV alone + storing the tables alone)", 1.4),
    ("ingest_ratio", "whole ingest (normalization + database build with statistics) / polars floor", 6.0),
    # Issue 29's: the whole ingest against what it cannot do without, each alone in the same run.
    (
        "ingest_vs_floors_ratio",
        "whole ingest / (reading the CSV + storing the tables' rows + storing the statistics' rows, each alone)",
        1.5,
    ),
    ("stats_output_ratio", "statistics SQL / storing the statistics' rows alone", 1.5),
    ("max_peak_rss_mb", "peak RSS of any phase (MB)", 1536.0),
    ("materialize_ratio", "materialize real history / trivial Dagster run", 3.0),
    ("noop_ratio", "no-change re-run / trivial Dagster run", 1.5),
    ("queries_ratio", "README example queries / the same on DuckDB tables, every table copied (worst query)", 1.5),
    ("cost_ratio", "cost per million rows of the whole ingest, N rows against the smallest scale", 1.2),
    # Issue 29: memory flat in the rows (1M within 10% of 10M).
    ("normalize_rss_growth_ratio", "peak RSS of normalization at the largest size / at the smallest (--rows, --scales)", 1.1),
    ("build_rss_growth_ratio", "peak RSS of the database build at the largest size / at the smallest (--rows, --scales)", 1.1),
    # Issue 29: new data costs what it is.
    ("new_folder_ratio", "materialize one new CI folder / materialize the whole history clean", 1 / 3),
    ("change_points_ratio", "series noise and change points / reading the series and storing their 2 tables alone", 1.5),
)
# The pipeline's phases measured at every size (--rows and --scales), whose peak RSS must not grow with the rows.
GROWING = {"normalize": NORMALIZE, "build": BUILD}


@dataclass
class Phase:
    name: str
    floor: str | None  # the phase it is set against
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    rows: int | None = None
    detail: dict | None = None

    @property
    def s_per_million(self) -> float | None:
        return self.wall_s / self.rows * 1e6 if self.rows else None


def _round(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def _divide(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _sum(*parts: float | None) -> float | None:
    """Their sum, or None when one was not measured: a floor missing a part would flatter the ratio."""
    return None if any(part is None for part in parts) else sum(parts)  # type: ignore[arg-type]


def ratios(phases: list[Phase], rows: int) -> dict[str, object]:
    by_name = {p.name: p for p in phases}

    def wall(name: str) -> float | None:
        return by_name[name].wall_s if name in by_name else None

    def ratio(name: str) -> float | None:
        phase = by_name.get(name)
        return _round(_divide(phase.wall_s, wall(phase.floor))) if phase and phase.floor else None

    read_store = wall(READ_ALONE) + wall(STORE_ALONE) if READ_ALONE in by_name and STORE_ALONE in by_name else None
    ingest = wall(NORMALIZE) + wall(BUILD) if BUILD in by_name else None
    build = by_name.get(BUILD)
    summary: dict[str, object] = {
        "normalize_ratio": ratio(NORMALIZE),
        "normalize_peak_rss_mb": _round(by_name[NORMALIZE].peak_rss_mb) if NORMALIZE in by_name else None,
        "materialize_ratio": ratio(MATERIALIZE),
        "noop_ratio": ratio(NOOP),
        "stats_ratio": ratio(STATS_SQL),
        "stats_output_ratio": _round(_divide(wall(STATS_SQL), wall(STATS_OUTPUT))),
        "normalize_read_store_ratio": _round(_divide(read_store, wall(CSV_FLOOR))),
        "normalize_vs_read_store_ratio": _round(_divide(wall(NORMALIZE), read_store)),
        "ingest_s": _round(ingest),
        "ingest_parts_s": {
            "normalize": _round(wall(NORMALIZE)),
            "database_load": _round(build.detail["load_s"]) if build else None,
            "statistics_sql": _round(build.detail["sql_s"]) if build else None,
            "database_build": _round(wall(BUILD)),
        },
        # Where the statistics SQL spends its time: each intermediate and statistic, timed in the same build.
        "stats_parts_s": {name: _round(s) for name, s in build.detail["sql_parts_s"].items()} if build else None,
        "ingest_ratio": _round(_divide(ingest, wall(CSV_FLOOR))),
        "ingest_vs_floors_ratio": _round(_divide(ingest, _sum(wall(READ_ALONE), wall(STORE_ALONE), wall(STATS_OUTPUT)))),
        "peak_rss_mb": {p.name: _round(p.peak_rss_mb) for p in phases},
        "max_peak_rss_mb": _round(max((by_name[n].peak_rss_mb for n in PIPELINE_PHASES if n in by_name), default=None)),
    }
    # The change-point step of the build (series_noise and change_points, timed in the same build) against
    # reading the series it reads and storing the two tables it writes, in the same run.
    # Four decimals: at a test's size the step takes milliseconds.
    summary["change_points_s"] = round(wall(SERIES), 4) if SERIES in by_name else None
    summary["change_points_floor_s"] = round(wall(SERIES_FLOOR), 4) if SERIES_FLOOR in by_name else None
    summary["change_points_ratio"] = ratio(SERIES)
    summary["dagster_runs"] = {
        p.name: {"events": p.detail["events"], "run_s": _round(p.detail["run_s"]), "materializations": p.detail["materializations"]}
        | {key: _round(p.detail[key]) for key in ("before_steps_s", "between_steps_s") if key in p.detail}
        | {key: p.detail[key] for key in ("steps_s", "event_kinds") if key in p.detail}
        for p in phases
        if p.name in (DAGSTER_FLOOR, MATERIALIZE, NOOP, NEW_FOLDER) and p.detail
    }
    summary["new_folder_ratio"] = ratio(NEW_FOLDER)
    summary["new_folder"] = by_name[NEW_FOLDER].detail.get("folder") if NEW_FOLDER in by_name else None
    summary.update(_query_ratios(by_name))
    summary.update(_costs(phases, rows))
    summary.update(_rss_growth(phases))
    return summary


def _at_each_size(phases: list[Phase], name: str) -> dict[int, Phase]:
    """The phase `name` at every size it was measured at: N's, and `name at <rows> rows` for each scale."""
    return {p.rows: p for p in phases if p.rows and (p.name == name or p.name.startswith(f"{name} at "))}


def _rss_growth(phases: list[Phase]) -> dict[str, object]:
    """Per phase of GROWING, its peak RSS at each size, and at the largest against the smallest (in MB and as a
    ratio): flat in the rows is a ratio near 1, whatever the sizes."""
    found: dict[str, object] = {"peak_rss_by_rows_mb": {}, "rss_growth_mb": {}}
    for key, name in GROWING.items():
        sizes = {rows: phase.peak_rss_mb for rows, phase in sorted(_at_each_size(phases, name).items())}
        found["peak_rss_by_rows_mb"][key] = {str(rows): _round(mb) for rows, mb in sizes.items()}  # type: ignore[index]
        small, large = (sizes[min(sizes)], sizes[max(sizes)]) if len(sizes) > 1 else (None, None)
        found["rss_growth_mb"][key] = _round(large - small) if small is not None else None  # type: ignore[index, operator]
        found[f"{key}_rss_growth_ratio"] = _round(_divide(large, small))
    return found


def _query_ratios(by_name: dict[str, Phase]) -> dict[str, object]:
    """Each README query on warehouse.duckdb against the same query with every table a DuckDB table (the
    plain tables' reference), and the build of either design: the figures that once decided between views and copies (both copy now)."""
    if QUERIES not in by_name or QUERIES_COPIES not in by_name:
        return {"queries_ratio": None}
    kept, copies = by_name[QUERIES].detail, by_name[QUERIES_COPIES].detail
    each = {q: _round(_divide(s, copies[q])) for q, s in kept.items()}
    found: dict[str, object] = {
        "queries_s": {q: round(s, 4) for q, s in kept.items()},
        "queries_copies_s": {q: round(s, 4) for q, s in copies.items()},
        "queries_ratios": each,
        "queries_ratio": max(each.values()),
    }
    for key, name in (("views", BUILD), ("copies", BUILD_COPIES)):
        detail = by_name[name].detail
        found[f"build_{key}"] = {
            "wall_s": _round(by_name[name].wall_s),
            "cpu_s": _round(by_name[name].cpu_s),
            "load_s": _round(detail["load_s"]),
            "sql_s": _round(detail["sql_s"]),
            "database_mb": _round(detail["database_mb"]),
            "peak_rss_mb": _round(by_name[name].peak_rss_mb),
        }
    return found


def _costs(phases: list[Phase], rows: int) -> dict[str, object]:
    """Seconds per million rows of the whole ingest at every size measured, and N's against the smallest's."""
    totals: dict[int, float] = {}
    for name in (NORMALIZE, BUILD):
        for size, phase in _at_each_size(phases, name).items():
            totals[size] = totals.get(size, 0.0) + phase.wall_s
    per_million = {size: seconds / size * 1e6 for size, seconds in sorted(totals.items())}
    smallest = min(per_million, default=None)
    return {
        "cost_per_million_s": {str(size): round(s, 2) for size, s in per_million.items()},
        "cost_ratio": _round(_divide(per_million.get(rows), per_million.get(smallest))) if smallest != rows else None,
        "cost_ratio_against_rows": smallest,
    }


def target_lines(summary: dict[str, object]) -> list[str]:
    lines = []
    for key, what, target in TARGETS:
        value = summary.get(key)
        verdict = "not measured" if value is None else ("met" if value <= target else "missed")
        lines.append(f"{key} {value} (target at most {target:g}: {verdict}): {what}")
    return lines


def rss_growth_line(summary: dict[str, object]) -> str | None:
    """Each growing phase's peak RSS at every size and its growth from the smallest to the largest."""
    by_rows = summary.get("peak_rss_by_rows_mb")
    if not isinstance(by_rows, dict) or not any(len(sizes) > 1 for sizes in by_rows.values()):
        return None
    each = []
    for key, sizes in by_rows.items():
        if len(sizes) > 1:
            at = ", ".join(f"{int(rows):,} rows {mb:.0f}" for rows, mb in sizes.items())
            each.append(f"{key} {at} (+{summary['rss_growth_mb'][key]:.0f} MB, {summary[f'{key}_rss_growth_ratio']}x)")  # type: ignore[index]
    return "peak RSS by rows (MB): " + "; ".join(each)


def dagster_runs_line(summary: dict[str, object]) -> str | None:
    """Per Dagster run of the bench: the events it wrote to the instance and its time inside the run."""
    runs = summary.get("dagster_runs")
    if not runs:
        return None
    each = "; ".join(
        f"{name} {run['events']} events ({run['materializations']} planned or materialized), {run['run_s']:.2f} s"
        + (
            f" ({run['before_steps_s']:.2f} s before the first step, {sum(run['steps_s'].values()):.2f} s in {len(run['steps_s'])} steps, "
            f"{run['between_steps_s']:.2f} s between them)"
            if "steps_s" in run
            else ""
        )
        for name, run in runs.items()
    )
    return f"Dagster runs, first event to last: {each}"


def new_folder_line(summary: dict[str, object]) -> str | None:
    """The new CI folder's run beside the clean build's, step by step (seconds inside the step, from each run's event
    log), with each step's ratio: where a new folder still costs what the whole history does."""
    runs = summary.get("dagster_runs")
    if not isinstance(runs, dict) or NEW_FOLDER not in runs or MATERIALIZE not in runs:
        return None
    clean, added = runs[MATERIALIZE]["steps_s"], runs[NEW_FOLDER]["steps_s"]
    each = ", ".join(
        f"{step} {added.get(step, 0.0):.2f}/{clean.get(step, 0.0):.2f}"
        + (f" ({added.get(step, 0.0) / clean[step]:.2f})" if clean.get(step) else "")
        for step in sorted({*clean, *added}, key=lambda step: -added.get(step, 0.0))
    )
    return (
        f"one new CI folder ({summary['new_folder']}) against a clean build: {summary['new_folder_ratio']} of its wall time "
        f"(target at most 1/3); run {runs[NEW_FOLDER]['run_s']:.2f} s against {runs[MATERIALIZE]['run_s']:.2f} s; "
        f"by step, new folder/clean s (ratio): {each}"
    )


def change_points_line(summary: dict[str, object]) -> str | None:
    """The change-point step against its floor, or None when the statistics were not measured."""
    if summary.get("change_points_s") is None:
        return None
    return (
        f"change_points_s {summary['change_points_s']:.2f} against its floor {summary['change_points_floor_s']:.2f} "
        f"(reading the series and storing series_noise and change_points alone): {summary['change_points_ratio']}x"
    )


def stats_parts_line(summary: dict[str, object]) -> str | None:
    """The statistics SQL by statistic, costliest first, or None when the statistics were not measured."""
    parts = summary.get("stats_parts_s")
    if not isinstance(parts, dict):
        return None
    sql = summary["ingest_parts_s"]["statistics_sql"]  # type: ignore[index]
    each = ", ".join(f"{name} {s:.2f}" for name, s in sorted(parts.items(), key=lambda item: -item[1]))
    return f"statistics SQL by statistic (s, of {sql:.2f}): {each}"


def table(phases: list[Phase]) -> str:
    """The phases as a markdown table, its cells padded so that it reads as columns in a terminal too."""
    from pipelines.core.metadata import markdown_table  # polars with it: the phases' processes need neither

    by_name = {p.name: p for p in phases}
    head = [f"{'phase':44}", f"{'wall s':>8}", f"{'s / M rows':>10}", f"{'CPU s':>7}", f"{'peak RSS MB':>11}", f"{'ratio to floor':>14}"]
    rows = []
    for p in phases:
        floor = by_name.get(p.floor) if p.floor else None
        ratio = f"{p.wall_s / floor.wall_s:.2f}x" if floor and floor.wall_s > 0 else ("floor" if p.name.startswith("floor") else "")
        per_million = f"{p.s_per_million:.2f}" if p.s_per_million is not None else ""
        cpu = f"{p.cpu_s:.1f}" if p.cpu_s else ""
        rows.append([f"{p.name:44}", f"{p.wall_s:8.2f}", f"{per_million:>10}", f"{cpu:>7}", f"{p.peak_rss_mb:11.0f}", f"{ratio:>14}"])
    return markdown_table(head, rows, width=None)
