"""Run identity (SPEC section 2): the distinct runs among staged rows, each run's first occurrence with its
provenance, and ids made unique where two run keys slug to the same id."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from pipelines.assemble.conflicts import CONFLICTS, conflict_rows, conflicting
from pipelines.core import schemas

if TYPE_CHECKING:
    from pipelines.assemble.snapshot_history import History

# Rows whose run got a suffixed id, for run_snapshots.
RENAMED = pl.Schema({"snapshot_id": pl.String, "row_number": pl.Int64, "run_id": pl.String})
# Deduplicated runs before `normalize.describe` adds the columns staging leaves out.
STAGED_RUNS = pl.Schema(
    {
        **schemas.RUN_ROWS,
        "first_seen_snapshot": pl.String,
        "last_seen_snapshot": pl.String,
        "in_latest": pl.Boolean,
        # The first CI snapshot that carries the run and names a release, else the first that carries it (its benchmarked
        # commit and release are the run's), if one does.
        "ci_snapshot": pl.String,
        "on_branch": pl.Boolean,
    }
)
# The run key of SPEC section 2, in the column names of RUN_ROWS.
RUN_KEY = ("raw_kernel", "provider", "pass", "metric", "x_name", "x_value", "raw_config", "gpu_name", "raw_timestamp")


@dataclass(frozen=True)
class SnapshotMarks:
    """The snapshots whose rows give a run its CI folder, and those no longer on their branch."""

    ci: frozenset[str] = frozenset()
    off_branch: frozenset[str] = frozenset()
    # CI snapshots whose folder names a release: a folder renamed to its release name gives its runs the release.
    released: frozenset[str] = frozenset()

    def is_ci(self) -> pl.Expr:
        return pl.col("snapshot_id").is_in(list(self.ci)) if self.ci else pl.lit(False)

    def is_released(self) -> pl.Expr:
        return pl.col("snapshot_id").is_in(list(self.released)) if self.released else pl.lit(False)

    def is_on_branch(self) -> pl.Expr:
        return ~pl.col("snapshot_id").is_in(list(self.off_branch)) if self.off_branch else pl.lit(True)


def marks_of(history: History) -> SnapshotMarks:
    return SnapshotMarks(ci=history.ci, off_branch=history.off_branch, released=history.released)


@dataclass(frozen=True)
class Identified:
    """`distinct_runs`'s runs and renamed rows, and the conflicting rows (conflicts.CONFLICTS, final run ids), which
    are neither runs nor rows of one: they go to quarantine."""

    runs: pl.DataFrame
    renamed: pl.DataFrame
    conflicts: pl.DataFrame


def distinct_runs(rows: pl.DataFrame, marks: SnapshotMarks | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The distinct runs among `rows`, sorted by run_id: each run's first occurrence in history with its
    provenance, ids made unique; and (snapshot_id, row_number, run_id) of the rows whose run got a new id."""
    identified = identify(rows, marks)
    return identified.runs, identified.renamed


def identify(rows: pl.DataFrame, marks: SnapshotMarks | None = None) -> Identified:
    """`distinct_runs`, and the rows that conflict with their run's first row (see conflicts): left out of the
    runs' provenance (they are no row of the run), returned apart."""
    # One chunk: gathers from a frame of many chunks (one per file piece) are several times slower.
    marks = marks or SnapshotMarks()
    no_conflicts = pl.DataFrame(schema=CONFLICTS)
    rows = rows.rechunk() if rows["_order"].is_sorted() else rows.sort("_order")
    distinct = each_row_a_run(rows, marks)
    if distinct is not None:
        return Identified(distinct, pl.DataFrame(schema=RENAMED), no_conflicts)
    key = list(RUN_KEY)
    rows = rows.with_columns(pl.struct(key).hash().alias("_key"))
    provenance = _provenance(rows, marks)
    if provenance.height < rows.height and not _one_key_per_hash(rows, provenance):
        # Two keys share a hash: group by the keys themselves.
        rows = rows.with_columns(pl.col("_order").min().over(key).alias("_key"))
        provenance = _provenance(rows, marks)
    found = no_conflicts
    if provenance.height < rows.height and (conflict := conflicting(rows)).any():
        found = conflict_rows(rows, conflict)
        rows = rows.filter(~conflict)
        provenance = _provenance(rows, marks)
    # One gather of the wide rows: the first occurrences, already in run_id order.
    runs = rows[provenance["_row"]].with_columns(
        pl.col("snapshot_id").alias("first_seen_snapshot"),
        provenance["last_seen_snapshot"],
        provenance["in_latest"],
        provenance["ci_snapshot"],
        provenance["on_branch"],
    )
    renamed_rows = pl.DataFrame(schema=RENAMED)
    neighbours = (pl.col("run_id") == pl.col("run_id").shift(1)) | (pl.col("run_id") == pl.col("run_id").shift(-1))
    if runs.select(neighbours.fill_null(False).any()).item():
        runs = _disambiguate(runs).sort("run_id")
        renamed = runs.filter(pl.col("_renamed")).select(*key, "run_id")
        renamed_rows = rows.select(*key, "snapshot_id", "row_number").join(renamed, on=key, how="inner", nulls_equal=True)
        renamed_rows = renamed_rows.select("snapshot_id", "row_number", "run_id")
        found = found.join(renamed, on=key, how="left", nulls_equal=True, suffix="_new", maintain_order="left")
        found = found.with_columns(pl.coalesce("run_id_new", "run_id").alias("run_id"))
    return Identified(runs.select(STAGED_RUNS.names()).cast(STAGED_RUNS), renamed_rows, found.select(CONFLICTS.names()))


def each_row_a_run(rows: pl.DataFrame, marks: SnapshotMarks | None = None) -> pl.DataFrame | None:
    """`distinct_runs` of rows whose run ids are all distinct (a file's first ingest: every row a new run), found
    with one sort instead of hashing every key; None when an id repeats. A repeated key always repeats
    its id, so distinct ids mean distinct keys, each seen once, and no id to disambiguate."""
    by_id = rows.select(pl.arg_sort_by("run_id")).to_series()
    ids = rows["run_id"].gather(by_id)
    if (ids == ids.shift(1)).any():
        return None
    marks = marks or SnapshotMarks()
    return (
        rows[by_id]
        .with_columns(
            pl.col("snapshot_id").alias("first_seen_snapshot"),
            pl.col("snapshot_id").alias("last_seen_snapshot"),
            pl.col("_latest").alias("in_latest"),
            pl.when(marks.is_ci()).then(pl.col("snapshot_id")).alias("ci_snapshot"),
            marks.is_on_branch().alias("on_branch"),
        )
        .select(STAGED_RUNS.names())
        .cast(STAGED_RUNS)
    )


def _provenance(rows: pl.DataFrame, marks: SnapshotMarks) -> pl.DataFrame:
    """Per run key (`_key`): the row of its first occurrence, its last snapshot on the branch (else its last), whether
    any of its snapshots is a latest one, its first CI snapshot that names a release (else its first CI snapshot) and whether one of its snapshots is on the branch;
    sorted by run_id. Rows are in history order (snapshots on the branch first), which group_by keeps within groups."""
    return (
        rows.select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
            "_key",
            "run_id",
            "snapshot_id",
            "_latest",
            marks.is_ci().alias("_ci"),
            marks.is_released().alias("_released"),
            marks.is_on_branch().alias("_on"),
        )
        .group_by("_key")
        .agg(
            pl.col("_row").first(),
            pl.col("run_id").first(),
            pl.coalesce(pl.col("snapshot_id").filter(pl.col("_on")).last(), pl.col("snapshot_id").last()).alias("last_seen_snapshot"),
            pl.col("_latest").any().alias("in_latest"),
            pl.coalesce(
                pl.col("snapshot_id").filter(pl.col("_released")).first(), pl.col("snapshot_id").filter(pl.col("_ci")).first()
            ).alias("ci_snapshot"),
            pl.col("_on").any().alias("on_branch"),
        )
        .sort("run_id", "_row")
    )


def _one_key_per_hash(rows: pl.DataFrame, provenance: pl.DataFrame) -> bool:
    key = list(RUN_KEY)
    firsts = rows[provenance["_row"]].select(*key, "_key")
    same = rows.select(*key, "_key").join(firsts, on="_key", how="left", suffix="_first")
    return bool(same.select(pl.all_horizontal([pl.col(k).eq_missing(pl.col(f"{k}_first")) for k in key]).all()).item())


def _disambiguate(runs: pl.DataFrame) -> pl.DataFrame:
    """Distinct runs whose ids coincide (keys that differ only in what slugs and dropped
    config keys lose) each get a suffix from a hash of their key, so every id stays unique."""
    clashing = runs["run_id"].is_duplicated()
    runs = runs.with_columns(pl.col("run_id").alias("_key_id"), clashing.alias("_renamed"))
    if not clashing.any():
        return runs
    key_text = pl.concat_str([pl.col(c).fill_null("") for c in RUN_KEY], separator="\x1f")
    suffix = key_text.map_elements(lambda key: hashlib.sha256(key.encode()).hexdigest()[:8], return_dtype=pl.String)
    return runs.with_columns(pl.when(pl.col("_renamed")).then(pl.format("{}~{}", "run_id", suffix)).otherwise("run_id").alias("run_id"))
