from __future__ import annotations

import os
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

import dagster as dg

from pipelines.core import instance, lifetime, settings
from pipelines.core.settings import Settings
from pipelines.ingest.source.upstream_changes import recorded_source
from pipelines.statistics import db
from pipelines.storage import store


class Warehouse(dg.ConfigurableResource):
    """The settings (`pipelines.core.settings.Settings`) as Dagster's resource: where the warehouse lives, what it
    reads, and which providers are baselines. One field per setting, of the same name; `settings` is the one value
    the steps below it take.

    Defaults come from the environment when the definitions load (`settings.read`, which says why not `dg.EnvVar`).
    """

    warehouse_dir: str
    source: str
    branch: str
    file_glob: str
    streams: list[str] = list(settings.STREAMS)
    # Empty: unset (the source's repository, upstream's CI branch; see source_settings.git_streams).
    ci_source: str = ""
    ci_branch: str = ""
    ci_file_glob: str = settings.DEFAULT_CI_FILE_GLOB
    cache_dir: str
    baselines: list[str]
    staging_workers: int = 1
    sensor_interval_s: int = settings.DEFAULT_SENSOR_INTERVAL_S

    @classmethod
    def of(cls, current: Settings) -> Warehouse:
        return cls(
            warehouse_dir=str(current.warehouse_dir),
            source=current.source,
            branch=current.branch,
            file_glob=current.file_glob,
            streams=list(current.streams),
            ci_source=current.ci_source or "",
            ci_branch=current.ci_branch or "",
            ci_file_glob=current.ci_file_glob,
            cache_dir=str(current.cache_dir),
            baselines=list(current.baselines),
            staging_workers=current.staging_workers,
            sensor_interval_s=current.sensor_interval_s,
        )

    @property
    def settings(self) -> Settings:
        return Settings(
            warehouse_dir=Path(self.warehouse_dir),
            cache_dir=Path(self.cache_dir),
            source=self.source,
            branch=self.branch,
            file_glob=self.file_glob,
            streams=tuple(self.streams),
            ci_source=self.ci_source or None,
            ci_branch=self.ci_branch or None,
            ci_file_glob=self.ci_file_glob,
            baselines=tuple(self.baselines),
            staging_workers=self.staging_workers,
            sensor_interval_s=self.sensor_interval_s,
        )

    @property
    def path(self) -> Path:
        return Path(self.warehouse_dir)

    def writing(self) -> AbstractContextManager[None]:
        """Hold the warehouse for writing: its file lock (Dagster's pool serializes Dagster's writers, the lock
        also the CLI's), and a table commit a killed writer left half done is finished first. A step process
        dies with its run's process, so that nothing of a killed run writes after it."""
        lifetime.step_dies_with_run()
        return store.writer_lock(self.path)

    def reading(self) -> AbstractContextManager[db.Session]:
        """A read-only session over warehouse.duckdb, never blocked by a writer."""
        return db.session(self.path)


def default_warehouse() -> Warehouse:
    """The settings of the environment; while LIGER_SOURCE is unset, a warehouse already built reads the source it was
    built from (and its streams, while LIGER_STREAMS is unset too), so that the UI, the daemon and `materialize`
    started without the variables keep reading what the warehouse holds (a bundle, offline) instead of being refused
    as another source. A new warehouse reads upstream."""
    current = built_from(settings.read(), os.environ)
    if home := os.environ.get("DAGSTER_HOME"):
        # The daemon, the webserver and `dg dev` load the definitions on the instance in DAGSTER_HOME.
        instance.claim(Path(home), current.warehouse_dir)
    return Warehouse.of(current)


def built_from(current: Settings, environ) -> Settings:
    """`current` with the source (and streams) the warehouse records, for each of LIGER_SOURCE and LIGER_STREAMS unset."""
    if environ.get("LIGER_SOURCE", "").strip() or (recorded := recorded_source(current.warehouse_dir)) is None:
        return current
    source, streams = recorded
    if environ.get("LIGER_STREAMS", "").strip() or streams is None:
        return replace(current, source=source)
    return replace(current, source=source, streams=streams)


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"warehouse": default_warehouse()})
