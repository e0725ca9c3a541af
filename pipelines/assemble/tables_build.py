"""Assemble the SPEC tables from the staged snapshots as one build (`storage.builds`), judge it by the blocking
checks, and publish it, unless the build of the same inputs and code is there already."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines import stages
from pipelines.assemble import assembly as tables
from pipelines.assemble import checks
from pipelines.core import layout, schemas
from pipelines.core.errors import UserError
from pipelines.ingest import staging
from pipelines.ingest.source import Listing
from pipelines.storage import builds, store

TABLE_NAMES = tuple(schemas.TABLES)  # the registry of tables is their schemas
# Where readers find each table: WAREHOUSE_DIR/<table>.parquet, a link into the published build.
LINKS = stages.stage(layout.TABLES_STAGE).published
# The contract checks, each on the table it concerns; a build that fails a blocking one is never published.
CHECKS: tuple[tuple[str, str, object, bool], ...] = (
    ("runs", "run_id_unique", checks.run_ids_unique, True),
    ("runs", "references_exist", checks.references_exist, True),
    ("measurements", "quantiles_ordered", checks.quantiles_ordered, True),
    ("snapshots", "every_row_accounted", checks.snapshot_accounting, True),
    ("snapshots", "no_snapshot_rejected", checks.snapshots_rejected, False),
    ("environments", "catalogs_cover_data", checks.catalog_coverage, False),
)
BLOCKING = frozenset(name for _, name, _, blocking in CHECKS if blocking)


@functools.cache
def tables_code_version() -> str:
    """The code that assembles the tables (and all it imports), with the catalogs it joins (pipelines/stages.py)."""
    return stages.code_version(layout.TABLES_STAGE)


class BuildRefused(UserError):
    """A build that failed a blocking check: it is kept unpublished, and readers keep the last good one."""

    def __init__(self, stage: str, failed: dict[str, checks.CheckOutcome]):
        self.failed = failed
        named = "; ".join(f"{name}: {outcome.description}" for name, outcome in failed.items())
        super().__init__(f"the new {stage} build failed its blocking checks and was not published ({named})")


@dataclass
class TablesReport:
    rewritten: bool
    row_counts: dict[str, int]
    # The build's key: what the tables were assembled from (the staged snapshots, the branch, the code), and
    # the tables' data version.
    key: str
    # Each check's outcome on the published build, by check name.
    outcomes: dict[str, checks.CheckOutcome] = field(default_factory=dict)
    # One line when upstream's history moved under the warehouse (a force-push dropped or restored snapshots).
    moved: str | None = None
    # Why the build of the same key found was rebuilt (a file deleted or damaged by hand), when it was.
    damaged: str | None = None


def tables_key(metas: list[staging.SnapshotMeta], listing: Listing | None) -> str:
    return stages.build_key(layout.TABLES_STAGE, tables_code_version(), tables.fingerprint(metas, listing))


def kept_build(warehouse: Path, listing: Listing | None) -> builds.Build | None:
    """The published tables build when build_tables would keep it as it is for `listing` (the build of the staged
    snapshots' key, published and intact); None when it would build, repair or publish another."""
    metas, damaged = staging.scan_staging(warehouse)
    current = builds.Stage(warehouse, layout.TABLES_STAGE).current()
    if damaged or current is None or current.key != tables_key(metas, listing) or _damage(current) is not None:
        return None
    return current


def build_tables(warehouse: Path, listing: Listing | None) -> TablesReport:
    """Assemble, check and publish all tables together, unless the build of the same inputs is published and intact."""
    metas, damaged = staging.scan_staging(warehouse)
    if damaged:
        # Assembled without it, the tables would silently lose its runs.
        raise store.DamagedFile(
            f"{damaged[0].problem}: materialize raw_snapshots (or everything), which stages the snapshot again", damaged[0].folder
        )
    stage = builds.Stage(warehouse, layout.TABLES_STAGE)
    key = tables_key(metas, listing)
    current = stage.current()
    found = stage.get(key)
    problem = _damage(found) if found is not None else None
    if found is not None and problem is None:
        build, report = found, _report(found, rewritten=False)
    else:
        try:
            build = stage.make(key, lambda folder: _write(warehouse, listing, folder))
        except store.DamagedFile as damage:
            if damage.path is not None and damage.path.parent.parent == layout.Layout(warehouse).staging:
                staging.discard_part(damage.path)
            raise
        report = _report(build, rewritten=True, damaged=problem)
        failed = {name: outcome for name, outcome in report.outcomes.items() if name in BLOCKING and not outcome.passed}
        if failed:
            stage.discard(build)
            raise BuildRefused(layout.TABLES_STAGE, failed)
    stage.publish(build, LINKS)
    if current is not None and current.key != build.key:
        # A build kept from before (the history pushed back) moves the branch as much as a new one.
        report.moved = _moved(_on_branch(current), _on_branch(build), build.content, _branches_gone(warehouse), current.content)
    return report


def _write(warehouse: Path, listing: Listing | None, folder: Path) -> dict:
    files = tables.write_tables(warehouse, listing, folder)
    counts = {name: file.rows for name, file in files.items()}
    # Two checks at a time: each reads its columns a batch at a time (Arrow and polars decode without the GIL), and
    # run one after another they left a core idle at the end of every build.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="checks") as judging:
        judged = {name: judging.submit(function, folder) for _, name, function, _ in CHECKS}
    outcomes = {name: outcome.result() for name, outcome in judged.items()}
    return {"row_counts": counts, "checks": {name: _as_json(outcome) for name, outcome in outcomes.items()}}


def _as_json(outcome: checks.CheckOutcome) -> dict:
    return {"passed": outcome.passed, "description": outcome.description, "details": outcome.details}


def _report(build: builds.Build, rewritten: bool, damaged: str | None = None) -> TablesReport:
    outcomes = {name: checks.CheckOutcome(**recorded) for name, recorded in build.result["checks"].items()}
    return TablesReport(rewritten, build.result["row_counts"], build.key, outcomes, damaged=damaged)


def _damage(build: builds.Build) -> str | None:
    """Why a build found is not usable: a file gone or resized, or a table whose footer does not read or counts other
    rows than its build wrote (overwritten in place; the check reads footers, not data)."""
    problem = build.damage()
    if problem is not None:
        return problem
    for name, rows in build.result["row_counts"].items():
        if store.parquet_rows(build.content / layout.table_file(name)) != rows:
            return (
                f"{build.content / layout.table_file(name)} is damaged (its footer does not read or counts other rows than its build wrote)"
            )
    return None


def _on_branch(build: builds.Build | None) -> dict[str, bool]:
    """Each snapshot of a build's `snapshots` table and whether it was on its branch; empty before the first build."""
    if build is None:
        return {}
    try:
        frame = pl.read_parquet(build.content / layout.table_file("snapshots"))
    except (OSError, pl.exceptions.PolarsError):
        return {}
    return dict(zip(frame["snapshot_id"].to_list(), frame["on_branch"].to_list()))


def _branches_gone(warehouse: Path) -> dict[str, str]:
    """{stream: branch} of the streams whose branch the last sync found missing (an optional stream, read empty):
    a deleted `gh-pages` empties the `ci` stream, which is no rewrite of the history."""
    raw = store.read_state(layout.Layout(warehouse).listing)
    absent = raw.get("absent_streams") if isinstance(raw.get("absent_streams"), list) else []
    streams = raw.get("identity", {}).get("streams") if isinstance(raw.get("identity"), dict) else None
    branches = {s.get("stream"): s.get("branch") for s in streams if isinstance(s, dict)} if isinstance(streams, list) else {}
    return {name: str(branches.get(name) or name) for name in absent if isinstance(name, str)}


# The query a rewrite's line gives: the runs whose published value the rewrite replaced, the old row kept in quarantine.
CHANGED_VALUES_QUERY = (
    "SELECT q.snapshot_id, q.reason FROM quarantine AS q JOIN snapshots AS s USING (snapshot_id) "
    "WHERE NOT s.on_branch AND q.reason LIKE 'conflict:%'"
)
NAMED_KERNELS = 5


def _changed_values(previous: Path, folder: Path) -> str | None:
    """How many runs of the previous build have another value in this one, and their kernels; None when none."""
    columns = ["run_id", "kernel", "raw_y_value_50", "raw_y_value_20", "raw_y_value_80"]
    old, new = (pl.scan_parquet(build / layout.table_file("runs")).select(columns) for build in (previous, folder))
    try:
        changed = (
            old.join(new, on="run_id", suffix="_now")
            .filter(pl.any_horizontal(*[~pl.col(c).eq_missing(pl.col(f"{c}_now")) for c in columns[2:]]))
            .select("kernel")
            .collect()
        )
    except (OSError, pl.exceptions.PolarsError):
        return None  # the previous build is gone or damaged: the line says what moved, without the count
    if changed.is_empty():
        return None
    kernels = sorted(set(changed["kernel"]))
    named = ", ".join(kernels[:NAMED_KERNELS]) + (", ..." if len(kernels) > NAMED_KERNELS else "")
    return f'{changed.height} run(s) changed value ({named}; `python -m pipelines sql "{CHANGED_VALUES_QUERY}"` lists them)'


def _moved(
    before: dict[str, bool], after: dict[str, bool], folder: Path, gone: dict[str, str] | None = None, previous: Path | None = None
) -> str | None:
    """The line a run prints when a force-push moved upstream's history: what left the branch, what came back, how many
    runs changed value (their kernels, and the query that lists them); a stream whose branch was deleted (`gone`:
    {stream: branch}) is named as such."""
    left = sorted(s for s, on in after.items() if not on and before.get(s, False))
    back = sorted(s for s, on in after.items() if on and before.get(s) is False)
    if not left and not back:
        return None
    runs = pl.scan_parquet(folder / layout.table_file("runs")).filter(~pl.col("on_branch")).select(pl.len()).collect().item()
    parts = []
    if gone and left:
        stream_of = dict(pl.read_parquet(folder / layout.table_file("snapshots"), columns=["snapshot_id", "stream"]).iter_rows())
        for stream, branch in sorted(gone.items()):
            if emptied := [s for s in left if stream_of.get(s) == stream]:
                parts.append(f"the branch {branch} is gone: the {stream} stream is empty ({len(emptied)} snapshot(s) went with it)")
        left = [s for s in left if stream_of.get(s) not in gone]
    if left:
        parts.append(f"{len(left)} snapshot(s) are no longer on their branch ({', '.join(left[:3])}{', ...' if len(left) > 3 else ''})")
    if back:
        parts.append(f"{len(back)} snapshot(s) are on it again")
    if previous is not None and (changed := _changed_values(previous, folder)):
        parts.append(changed)
    headline = "upstream history was rewritten" if left or back else "upstream deleted a branch"
    return (
        f"{headline}: {'; '.join(parts)}; what left is kept, marked snapshots.on_branch = false, "
        f"and {runs} run(s) only it holds are kept, marked runs.on_branch = false"
    )
