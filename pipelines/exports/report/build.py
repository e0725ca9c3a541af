"""Build the static report into WAREHOUSE_DIR/report/, all at once or not at all.

The site (`site.write_site`) is written into a temporary folder beside `report/` and swapped
in (`store.swap_folder`): the old folder is renamed away, the new one renamed in, the old one deleted.
`build.json` in the site records which warehouse.duckdb and which report code
it was built from, so `is_stale` can tell when either changed since.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from pipelines.core import sql_files
from pipelines.duck import db
from pipelines.exports.report import html
from pipelines.exports.report.data import ReportData, load
from pipelines.exports.report.site import INDEX, ReportSummary, write_site
from pipelines.storage import store

REPORT_DIR = "report"
STAMP = "build.json"


def report_dir(warehouse_dir: Path) -> Path:
    return Path(warehouse_dir) / REPORT_DIR


def _database_stamp(warehouse_dir: Path) -> dict[str, Any]:
    # The database is replaced, never edited, so its mtime and size tell one build from another.
    stat = db.database_path(warehouse_dir).stat()
    return {"mtime_ns": stat.st_mtime_ns, "size": stat.st_size}


def _code_fingerprint() -> str:
    """A digest of the report's code and SQL: a report drawn by older code is stale too."""
    code = [(file.name, file.read_bytes()) for file in sorted(Path(__file__).parent.glob("*.py"))]
    sql = [(name.rpartition("/")[2] + ".sql", sql_files.text(name).encode()) for name in sql_files.names("report")]
    digest = hashlib.sha256()
    for name, content in code + sql:
        digest.update(name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()


def _read_stamp(warehouse_dir: Path) -> dict[str, Any] | None:
    folder = report_dir(warehouse_dir)
    stamp = store.read_json(folder / STAMP)
    return stamp if isinstance(stamp, dict) and (folder / INDEX).is_file() else None


def _fresh_stamp(warehouse_dir: Path) -> dict[str, Any] | None:
    """The report's build record when it is up to date, else None."""
    stamp = _read_stamp(warehouse_dir)
    if stamp is None or stamp.get("code") != _code_fingerprint():
        return None
    try:
        return stamp if stamp.get("database") == _database_stamp(warehouse_dir) else None
    except FileNotFoundError:
        return None


def is_stale(warehouse_dir: Path) -> bool:
    """True when the report is missing, or was built from another warehouse.duckdb or by other code."""
    return _fresh_stamp(warehouse_dir) is None


def build_report_if_stale(warehouse_dir: Path, force: bool = False) -> tuple[bool, ReportSummary]:
    """(built, summary): build the report unless the one there is up to date."""
    stamp = None if force else _fresh_stamp(warehouse_dir)
    if stamp is None:
        return True, build_report(warehouse_dir)
    summary = stamp["summary"]
    folder = report_dir(warehouse_dir)
    return False, ReportSummary(folder, summary["kernel_pages"], summary["gpus"], summary["pages"], summary["images"])


def build_report(warehouse_dir: Path) -> ReportSummary:
    """Render the whole site from warehouse.duckdb and swap it in as WAREHOUSE_DIR/report/.

    Hold `store.writer_lock` around it when other writers may run: their
    `store.recover` sweeps temporary folders such as this build's.
    """
    warehouse_dir = Path(warehouse_dir)
    stamp = _database_stamp(warehouse_dir)  # before reading: a newer file makes the report stale, never falsely fresh
    data = load(warehouse_dir)
    final = report_dir(warehouse_dir)
    staging = store.temp_path(final)
    try:
        summary = write_site(data, staging, footer=_footer(data))
        record = {
            "database": stamp,
            "code": _code_fingerprint(),
            "built_at": _now().isoformat(),
            "summary": {"kernel_pages": summary.kernel_pages, "gpus": summary.gpus, "pages": summary.pages, "images": summary.images},
        }
        (staging / STAMP).write_text(json.dumps(record, indent=2), encoding="utf-8")
        store.swap_folder(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ReportSummary(final, summary.kernel_pages, summary.gpus, summary.pages, summary.images)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def _footer(data: ReportData) -> str:
    built = f"Built {html.text(_now())} UTC from warehouse.duckdb"
    if not data.snapshots.height:
        return built + "."
    newest = data.snapshots.sort("committed_at", "snapshot_id", nulls_last=False).row(-1, named=True)
    return (
        f"{built}: {data.snapshots.height} snapshots of {html.text(newest['source'])}; newest: "
        f"{html.text(newest['snapshot_id'])}, upstream commit {html.commit(newest['commit'])} "
        f"({html.text(newest['subject'])}, {html.text(newest['committed_at'])})."
    )
