"""warehouse.duckdb as a build of its own (`storage.builds`): made when a statistic's key or the file's own code
changed, judged by the statistics' SQL checks before it is published, and otherwise kept as it is.

The build records its sha256: bit rot or a copy tool can change a byte and keep the size, so a run that would
keep the file first reads it whole (a few seconds at 10M runs) and builds it again when it differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipelines import stages
from pipelines.core import layout
from pipelines.core.errors import UserError
from pipelines.statistics import database_build, lineage
from pipelines.statistics import statistic_versions as versions
from pipelines.statistics.db import STATISTICS, TABLES, SqlCheckResult, run_checks
from pipelines.storage import builds

# Where readers find the file: WAREHOUSE_DIR/warehouse.duckdb, a link into the published build.
LINKS = stages.stage(layout.DATABASE_STAGE).published


class DatabaseRefused(UserError):
    """A new warehouse.duckdb whose statistics failed a check: kept unpublished, readers keep the last good one."""


@dataclass(frozen=True)
class DatabaseBuild:
    rebuilt: bool
    row_counts: dict[str, int]
    key: str
    # Each statistic's key: its data version.
    statistics: dict[str, str]
    checks: list[SqlCheckResult] = field(default_factory=list)
    damaged: str | None = None  # why the file found was not the one its build wrote, when it was built again for that


def published_tables_key(warehouse_dir: Path) -> str:
    """The published tables' build key; for tables written outside a build (a test's, the bench's), the identity
    of their files, which a rewrite changes."""
    current = builds.Stage(warehouse_dir, layout.TABLES_STAGE).current()
    if current is not None:
        return current.key
    states = []
    paths = layout.Layout(warehouse_dir)
    for table in TABLES:
        for path in [paths.table(table), *sorted(paths.table_folder(table).glob("**/*.parquet"))]:
            if path.is_file():
                stat = path.stat()
                states.append([str(path), stat.st_ino, stat.st_mtime_ns, stat.st_size])
    return builds.build_key("unbuilt tables", "", states)


def kept_build(warehouse_dir: Path, baselines: Sequence[str]) -> builds.Build | None:
    """The published database build when build_database_if_changed of every statistic would keep it as it is (the
    keys the published tables and code give every statistic, the file its build wrote); None when it would build."""
    published = builds.Stage(warehouse_dir, layout.DATABASE_STAGE).current()
    if published is None:
        return None
    statistics = versions.statistic_keys(published_tables_key(warehouse_dir), baselines, {})
    if published.key != versions.database_key(statistics, baselines) or _damage(published, warehouse_dir) is not None:
        return None
    return published


def build_database_if_changed(warehouse_dir: Path, baselines: Sequence[str], selected: Collection[str] | None = None) -> DatabaseBuild:
    """Publish the database build of the tables and code as they are now, building it unless it exists intact.

    `selected` (None: every statistic) names the statistics this run makes: those and the statistics they read
    (`lineage.needed`) get the keys the tables and code give them now, computed unless the published file holds
    them with those keys; the others are copied from the published file as they are, with the keys they had.
    """
    warehouse_dir = Path(warehouse_dir)
    stage = builds.Stage(warehouse_dir, layout.DATABASE_STAGE)
    published = stage.current()
    kept = _kept(published, warehouse_dir, lineage.needed(selected))
    statistics = versions.statistic_keys(published_tables_key(warehouse_dir), baselines, kept)
    key = versions.database_key(statistics, baselines)
    found = stage.get(key)
    damaged = _damage(found, warehouse_dir) if found is not None else None
    if found is not None and damaged is None:
        stage.publish(found, LINKS)
        return _outcome(found, rebuilt=False)
    reuse = _reusable(published, warehouse_dir, statistics, frozenset(kept))
    build = stage.make(key, lambda folder: _write(warehouse_dir, baselines, statistics, folder, reuse))
    failing = [check for check in _checks(build) if not check.passed]
    if failing:
        stage.discard(build)
        named = ", ".join(sorted({f"{check.check} on {check.table}" for check in failing}))
        raise DatabaseRefused(f"the new {layout.DATABASE} failed its checks ({named}) and was not published: the last good one stays")
    stage.publish(build, LINKS)
    return _outcome(build, rebuilt=True, damaged=damaged)


def _kept(published: builds.Build | None, warehouse_dir: Path, needed: frozenset[str]) -> dict[str, str]:
    """The statistics not needed by this run that the published file holds, with their keys there; none when the
    file is damaged (then every statistic is computed)."""
    if published is None or needed >= set(STATISTICS):
        return {}
    earlier = published.result.get("statistics", {})
    kept = {name: earlier[name] for name in STATISTICS if name not in needed and name in earlier}
    if kept and _damage(published, warehouse_dir) is not None:
        return {}
    return kept


def _reusable(
    published: builds.Build | None, warehouse_dir: Path, statistics: dict[str, str], kept: frozenset[str] = frozenset()
) -> database_build.Reuse:
    """The statistics the published file holds with the keys they have now, when that file is intact. The file is
    read whole for its sha256 only when a statistic would be copied from it: new tables change every key."""
    if published is None:
        return database_build.Reuse()
    earlier = published.result.get("statistics", {})
    same = frozenset(name for name, key in statistics.items() if earlier.get(name) == key)
    reuse = database_build.Reuse(published.content / layout.DATABASE, same, kept & same)
    if not (reuse.copied() or reuse.kept_views()) or _damage(published, warehouse_dir) is not None:
        return database_build.Reuse()
    return reuse


def _write(warehouse_dir: Path, baselines: Sequence[str], statistics: dict[str, str], folder: Path, reuse: database_build.Reuse) -> dict:
    target = folder / layout.DATABASE
    counts = database_build.build_database(warehouse_dir, baselines, target, reuse)
    checks = [{"check": c.check, "table": c.table, "failures": c.failures} for c in run_checks(folder)]
    # What this build computed rather than copied from the published one (a statistic whose key it kept).
    computed = sorted(set(statistics) - reuse.copied() - reuse.kept_views())
    return {"row_counts": counts, "statistics": statistics, "computed": computed, "sha256": file_sha256(target), "checks": checks}


def _checks(build: builds.Build) -> list[SqlCheckResult]:
    return [SqlCheckResult(**recorded) for recorded in build.result["checks"]]


def _outcome(build: builds.Build, rebuilt: bool, damaged: str | None = None) -> DatabaseBuild:
    result = build.result
    return DatabaseBuild(rebuilt, result["row_counts"], build.key, result["statistics"], _checks(build), damaged)


def _damage(build: builds.Build, warehouse_dir: Path) -> str | None:
    problem = build.damage()
    if problem is not None:
        return problem
    if file_sha256(build.content / layout.DATABASE) != build.result["sha256"]:
        return f"{layout.Layout(warehouse_dir).database} is damaged (its sha256 differs from the one its build recorded)"
    return None


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
