"""Assemble the SPEC tables from the staged snapshots and commit them together, unless nothing they depend on changed."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.assemble import tables
from pipelines.core import schemas
from pipelines.ingest import staging
from pipelines.ingest.source_types import Listing
from pipelines.storage import store

TABLE_NAMES = tuple(schemas.TABLES)  # the registry of tables is their schemas


@dataclass
class TablesReport:
    rewritten: bool
    row_counts: dict[str, int]
    # What the tables were assembled from (the staged snapshots, the files at head, the code).
    fingerprint: str
    # One line when upstream's history moved under the warehouse (a force-push dropped or restored snapshots).
    moved: str | None = None


def build_tables(warehouse: Path, listing: Listing | None) -> TablesReport:
    """Assemble and commit all tables together, unless nothing they depend on changed."""
    metas, damaged = staging.scan_staging(warehouse)
    if damaged:
        # Assembled without it, the tables would silently lose its runs.
        raise store.DamagedFile(
            f"{damaged[0].problem}: materialize raw_snapshots (or everything), which stages the snapshot again", damaged[0].folder
        )
    print_ = tables.fingerprint(metas, listing)
    state_path = warehouse / tables.STATE
    state = store.read_state(state_path)
    if state.get("fingerprint") == print_ and _tables_intact(warehouse, state.get("row_counts")):
        return TablesReport(rewritten=False, row_counts=state["row_counts"], fingerprint=print_)
    before = _on_branch(warehouse)
    # The tables are written straight into a scratch folder of the warehouse (swept by store.recover if
    # the run dies), then renamed into place together.
    scratch = store.temp_path(warehouse / "_tables")
    scratch.mkdir(parents=True)
    try:
        files = tables.write_tables(warehouse, listing, scratch)
        store.commit_files(warehouse, {f"{name}.parquet": file.path for name, file in files.items()})
    except store.DamagedFile as damage:
        if damage.path is not None and damage.path.parent.parent == staging.staging_dir(warehouse):
            staging.mark_damaged(damage.path.parent, str(damage))
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    counts = {name: file.rows for name, file in files.items()}
    store.write_json_atomic(state_path, {"fingerprint": print_, "row_counts": counts})
    return TablesReport(rewritten=True, row_counts=counts, fingerprint=print_, moved=_moved(before, _on_branch(warehouse), warehouse))


def _tables_intact(warehouse: Path, row_counts: object) -> bool:
    """Every table file's footer reads and counts the rows the last build wrote: an unchanged fingerprint
    must not keep a table file damaged since (the check reads footers, not data)."""
    if not isinstance(row_counts, dict):
        return False
    return all(store.parquet_rows(warehouse / f"{name}.parquet") == row_counts.get(name) for name in TABLE_NAMES)


def _on_branch(warehouse: Path) -> dict[str, bool]:
    """Each snapshot of the committed `snapshots` table and whether it was on its branch; empty before the first build
    (a table written before `on_branch` existed counts every snapshot on it)."""
    try:
        frame = pl.read_parquet(warehouse / "snapshots.parquet")
    except (OSError, pl.exceptions.PolarsError):
        return {}
    flags = frame["on_branch"] if "on_branch" in frame.columns else pl.repeat(True, frame.height, eager=True)
    return dict(zip(frame["snapshot_id"].to_list(), flags.to_list()))


def _moved(before: dict[str, bool], after: dict[str, bool], warehouse: Path) -> str | None:
    """The line a run prints when a force-push moved upstream's history: what left the branch, what came back."""
    left = sorted(s for s, on in after.items() if not on and before.get(s, False))
    back = sorted(s for s, on in after.items() if on and before.get(s) is False)
    if not left and not back:
        return None
    runs = pl.scan_parquet(warehouse / "runs.parquet").filter(~pl.col("on_branch")).select(pl.len()).collect().item()
    parts = []
    if left:
        parts.append(f"{len(left)} snapshot(s) are no longer on their branch ({', '.join(left[:3])}{', ...' if len(left) > 3 else ''})")
    if back:
        parts.append(f"{len(back)} snapshot(s) are on it again")
    return (
        f"upstream history was rewritten: {'; '.join(parts)}; what left is kept, marked snapshots.on_branch = false, "
        f"and {runs} run(s) only it holds are kept, marked runs.on_branch = false"
    )
