from contextlib import AbstractContextManager
from pathlib import Path

import dagster as dg

from pipelines.core import settings
from pipelines.duck import warehouse_db
from pipelines.ingest.steps import SourceSettings
from pipelines.storage import store


class Warehouse(dg.ConfigurableResource):
    """Where the warehouse lives, what it reads, and which providers are baselines.

    Defaults come from the environment (`WAREHOUSE_DIR`, `LIGER_SOURCE`,
    `LIGER_BRANCH`, `LIGER_BASELINES`, `LIGER_STAGING_WORKERS`) when the definitions load.
    """

    warehouse_dir: str
    source: str
    branch: str
    file_glob: str
    cache_dir: str
    baselines: list[str]
    staging_workers: int = 1

    @property
    def path(self) -> Path:
        return Path(self.warehouse_dir)

    def source_settings(self) -> SourceSettings:
        return SourceSettings(self.source, self.branch, self.file_glob, Path(self.cache_dir))

    def writing(self) -> AbstractContextManager[None]:
        """Hold the warehouse for writing: its file lock (Dagster's pool serializes Dagster's writers, the lock
        also the CLI's), and a table commit a killed writer left half done is finished first."""
        return store.writer_lock(self.path)

    def reading(self) -> AbstractContextManager[warehouse_db.Session]:
        """A read-only session over warehouse.duckdb, never blocked by a writer."""
        return warehouse_db.session(self.path)


def default_warehouse() -> Warehouse:
    return Warehouse(
        warehouse_dir=str(settings.warehouse_dir()),
        source=settings.source(),
        branch=settings.branch(),
        file_glob=settings.file_glob(),
        cache_dir=str(settings.cache_dir()),
        baselines=list(settings.baselines()),
        staging_workers=settings.staging_workers(),
    )


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"warehouse": default_warehouse()})
