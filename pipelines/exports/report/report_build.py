"""Build the static report as a build of its own (`storage.builds`), published as WAREHOUSE_DIR/report/.

The site (`site.write_site`) is written into a new build folder, then published by one rename of the stage's
`current` link; `report` links to it. The build's key holds the report's code version (its modules and SQL)
and the data versions it reads (the stored statistics' keys and the tables' key), so the report is built again
exactly when one of those changed, or when a file of the published one was deleted by hand.
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path

from pipelines import stages
from pipelines.core import layout
from pipelines.exports.report import html
from pipelines.exports.report.data import ReportData, load
from pipelines.exports.report.site import ReportSummary, write_site
from pipelines.statistics import database_publish as publish
from pipelines.statistics import db
from pipelines.storage import builds

# Where readers find the site: WAREHOUSE_DIR/report, a link to the published build's files folder.
LINKS = stages.stage(layout.REPORT_STAGE).published
# What the report reads: the stored statistics (run_noise, a view of runs, it does not) and the tables.
STATISTICS = tuple(name for name in db.STATISTICS if name not in db.VIEWS)


@functools.cache
def report_code_version() -> str:
    """The report's modules and SQL (pipelines/stages.py): a report drawn by older code is stale too."""
    return stages.code_version(layout.REPORT_STAGE)


def report_key(warehouse_dir: Path) -> str:
    """The key of the report the warehouse's published database makes; for a database built outside a build (a
    test's), the identity of its file, which a rebuild changes."""
    database = builds.Stage(warehouse_dir, layout.DATABASE_STAGE).current()
    if database is not None:
        inputs: object = {name: database.result["statistics"][name] for name in STATISTICS} | {
            "tables": publish.published_tables_key(warehouse_dir)
        }
    else:
        stat = layout.Layout(warehouse_dir).database.stat()
        inputs = {"database": [stat.st_ino, stat.st_mtime_ns, stat.st_size]}
    return stages.build_key(layout.REPORT_STAGE, report_code_version(), inputs)


def is_stale(warehouse_dir: Path) -> bool:
    """True when the published report is missing or damaged, or was built from other statistics or by other code."""
    current = builds.Stage(warehouse_dir, layout.REPORT_STAGE).current()
    try:
        return current is None or current.key != report_key(warehouse_dir) or current.damage() is not None
    except FileNotFoundError:
        return True


def build_report_if_stale(warehouse_dir: Path, force: bool = False) -> tuple[bool, ReportSummary]:
    """(built, summary): build and publish the report unless the build of the same key is there intact."""
    stage = builds.Stage(warehouse_dir, layout.REPORT_STAGE)
    found = None if force else stage.get(report_key(warehouse_dir))
    if found is not None and found.damage() is None:
        stage.publish(found, LINKS)
        return False, _summary(warehouse_dir, found.result)
    return True, build_report(warehouse_dir)


def build_report(warehouse_dir: Path) -> ReportSummary:
    """Render the whole site from warehouse.duckdb as a new build and publish it as WAREHOUSE_DIR/report/.

    Hold `store.writer_lock` around it when other writers may run: their `store.sweep` deletes temporary
    folders such as this build's.
    """
    warehouse_dir = Path(warehouse_dir)
    stage = builds.Stage(warehouse_dir, layout.REPORT_STAGE)
    key = report_key(warehouse_dir)  # before reading: a newer database makes the report stale, never falsely fresh

    def write(folder: Path) -> dict:
        data = load(warehouse_dir)
        summary = write_site(data, folder, footer=_footer(data))
        return {"kernel_pages": summary.kernel_pages, "gpus": summary.gpus, "pages": summary.pages, "images": summary.images}

    build = stage.make(key, write)
    stage.publish(build, LINKS)
    return _summary(warehouse_dir, build.result)


def _summary(warehouse_dir: Path, recorded: dict) -> ReportSummary:
    return ReportSummary(
        layout.Layout(warehouse_dir).report, recorded["kernel_pages"], recorded["gpus"], recorded["pages"], recorded["images"]
    )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def _footer(data: ReportData) -> str:
    built = f"Built {html.text(_now())} UTC from {layout.DATABASE}"
    if not data.snapshots.height:
        return built + "."
    newest = data.snapshots.sort("committed_at", "snapshot_id", nulls_last=False).row(-1, named=True)
    return (
        f"{built}: {data.snapshots.height} snapshots of {html.text(newest['source'])}; newest: "
        f"{html.text(newest['snapshot_id'])}, upstream commit {html.commit(newest['commit'])} "
        f"({html.text(newest['subject'])}, {html.text(newest['committed_at'])})."
    )
