"""The exports as builds (`storage.builds`): each export is a stage whose key is its code version and the tables'
key, written whole into a build folder and published under WAREHOUSE_DIR/exports/ by links, so a run with the
same tables and code keeps the files (and their data version) as they are."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pipelines import stages
from pipelines.statistics.database_publish import published_tables_key
from pipelines.storage import builds


@dataclass(frozen=True)
class Export:
    """One export by its stage's name in the registry (pipelines/stages.py), which says what writes it and where it is
    published."""

    stage: str

    @property
    def links(self) -> Mapping[str, str]:
        """Published path (relative to the warehouse) -> path in the build ("" for the build folder itself)."""
        return stages.stage(self.stage).published

    def code_version(self) -> str:
        return stages.code_version(self.stage)

    def key(self, warehouse: Path) -> str:
        return stages.build_key(self.stage, self.code_version(), {"tables": published_tables_key(warehouse)})


@dataclass(frozen=True)
class ExportBuild:
    built: bool
    counts: dict[str, int]  # each file written -> its rows (or benchmarks)
    key: str  # the export's data version


def publish_export(warehouse: Path, export: Export, write: Callable[[Path], dict[str, int]]) -> ExportBuild:
    """Publish the export's build for the tables and code as they are, `write(folder)`-ing it unless it is there
    intact. Hold the writer lock."""
    stage = builds.Stage(warehouse, export.stage)
    key = export.key(warehouse)
    found = stage.get(key)
    built = found is None or found.damage() is not None
    build = stage.make(key, write) if built else found
    stage.publish(build, export.links)
    return ExportBuild(built, build.result, key)
