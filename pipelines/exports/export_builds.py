"""The exports as builds (`storage.builds`): each export is a stage whose key is its code version and the tables'
key, written whole into a build folder and published under WAREHOUSE_DIR/exports/ by links, so a run with the
same tables and code keeps the files (and their data version) as they are."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pipelines import stages
from pipelines.core import layout
from pipelines.exports import liger_csv, ndjson
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


def kept_build(warehouse: Path, export: Export) -> builds.Build | None:
    """The export's published build when publish_export would keep it as it is (the key of the published tables and
    code, every file there); None when it would write one."""
    current = builds.Stage(warehouse, export.stage).current()
    if current is None or current.key != export.key(warehouse) or current.damage() is not None:
        return None
    return current


def publish_export(warehouse: Path, export: Export, write: Callable[[Path, builds.Build | None], dict[str, int]]) -> ExportBuild:
    """Publish the export's build for the tables and code as they are, `write(folder, earlier)`-ing it unless it is
    there intact (`earlier`: the build published before, whose files a writer may keep). Hold the writer lock."""
    stage = builds.Stage(warehouse, export.stage)
    key = export.key(warehouse)
    found = stage.get(key)
    built = found is None or found.damage() is not None
    earlier = stage.current()
    build = stage.make(key, lambda folder: write(folder, earlier)) if built else found
    stage.publish(build, export.links)
    return ExportBuild(built, build.result, key)


def write_liger_csvs(warehouse: Path, folder: Path, earlier: builds.Build | None, warn: Callable[[str], None]) -> dict[str, int]:
    """The latest Liger CSVs into the build's `folder`, each file of `earlier` whose inputs are unchanged copied."""
    kept = liger_csv.Kept(earlier.content, earlier.inputs()) if earlier is not None else None
    counts, digests = liger_csv.write_latest_digested(warehouse, folder, warn, kept, code=stages.code_version(layout.LIGER_CSV_STAGE))
    builds.record_inputs(folder, digests)
    return counts


def write_resource_documents(warehouse: Path, folder: Path, earlier: builds.Build | None) -> dict[str, int]:
    """The resource documents into the build's `folder`, each run's line of `earlier` kept where the run is unchanged."""
    runs = layout.document_file("runs")
    kept = ndjson.Kept(earlier.content / runs, earlier.inputs().get(runs), earlier.input_rows) if earlier is not None else None
    counts, digests, sha256 = ndjson.write_ndjson_digested(warehouse, folder, kept, code=stages.code_version(layout.DOCUMENTS_STAGE))
    digests.write_parquet(builds.input_rows_path(folder))
    builds.record_inputs(folder, {runs: sha256})
    return counts
