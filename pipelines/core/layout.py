"""Every path of the warehouse folder, named in one place (as dlt's `PackageStorage` owns a load package's).

    WAREHOUSE_DIR/
      _source.json                         the source's listing at the last sync: read by the tables step and the
                                           sensor without asking upstream again; it also names the warehouse's source
      _staging/<key>/                      one staged snapshot (key: `snapshot_key` of its id), renamed into place whole
        rows-00000.parquet, ...            its accepted rows, in parts
        quarantine-00000.parquet, ...      its quarantined rows, in parts
        workloads.parquet                  the workload answers of its configs, joined back by the assembly
        meta.json                          its accounting, layout and normalizer version: written last
      _builds/<stage>/<key>/files/         what one build of a stage publishes
      _builds/<stage>/<key>/manifest.json  every file of the build with its size, and what it returned; written last
      _builds/<stage>/current, previous    links to the published build and the one before it (kept for readers on it)
      runs.parquet, ...                    one per table: links into _builds/tables/current/files/
      warehouse.duckdb                     a link into _builds/database/current/files/
      report                               a link to _builds/report/current/files (the static site)
      exports/runs.ndjson, ...             links into _builds/resource_documents/current/files/
      exports/liger_csv, exports/bmf       links to the files of _builds/latest_liger_csvs/, _builds/bmf_exports/
      .writer.lock                         one writer at a time outside Dagster's pool; the kernel drops it when a
                                           writer dies
      .<name>.tmp-<random>                 what a writer has not finished (`storage.store.temp_path`): swept by the next

Outside the warehouse folder, one path belongs to it too:

    DAGSTER_HOME/.liger-warehouse          which warehouse the Dagster instance serves (one instance per warehouse)

(LIGER_CACHE_DIR holds copies of the source, not the warehouse: its paths are the sources' own, and the sensor's
copy, `sensor/`, is named by `ingest/source/upstream_changes.py`.)

`Layout(root)` gives each path of one warehouse; the module's names give the same paths relative to a folder, for
the places that write them into a build's or a staged snapshot's temporary folder. Nothing else in `pipelines/`
spells these names (tests/core/test_layout.py checks it). Standard library only: every layer may import it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

LISTING = "_source.json"
STAGING = "_staging"
META = "meta.json"
WORKLOADS = "workloads.parquet"
BUILDS = "_builds"
MANIFEST = "manifest.json"
# Beside a build's manifest: the digest of what each of its files was made from, so the next build can keep a file whose
# inputs did not change.
INPUTS = "inputs.json"
# ... and per row of a file, where a file is made of many independent rows (a run's document).
INPUT_ROWS = "inputs.parquet"
# The folder of a build that holds what it publishes (the manifest beside it is never among what readers see).
FILES = "files"
CURRENT = "current"
PREVIOUS = "previous"
DATABASE = "warehouse.duckdb"
REPORT = "report"
EXPORTS = "exports"
LOCK = ".writer.lock"
OWNER_MARKER = ".liger-warehouse"

# What a warehouse written before builds kept beside its outputs (stamps, a journal): deleted by the first writer
# of a newer version, since builds replace every one of them.
FORMER_STAMPS = ("_state.json", "_statistics_state.json", "_journal.json", "exports/_stamps")

# The stages whose output is a build (`storage.builds`): the folder names under _builds/.
TABLES_STAGE = "tables"
DATABASE_STAGE = "database"
REPORT_STAGE = "report"
DOCUMENTS_STAGE = "resource_documents"
LIGER_CSV_STAGE = "latest_liger_csvs"
BMF_STAGE = "bmf_exports"
STAGES = (TABLES_STAGE, DATABASE_STAGE, DOCUMENTS_STAGE, LIGER_CSV_STAGE, BMF_STAGE, REPORT_STAGE)

# The exports' folders under exports/, and the resource documents' files there.
LIGER_CSV_EXPORT = "liger_csv"
BMF_EXPORT = "bmf"
DOCUMENT_KINDS = ("runs", "protocols", "environments")


def table_file(name: str) -> str:
    """A table's file name, in the warehouse and in a tables build alike."""
    return f"{name}.parquet"


def document_file(kind: str) -> str:
    """The NDJSON file of one kind of resource document (`runs`, `protocols`, `environments`)."""
    return f"{kind}.ndjson"


DOCUMENT_FILES = tuple(document_file(kind) for kind in DOCUMENT_KINDS)


def snapshot_key(snapshot_id: str) -> str:
    """The name of a snapshot's staging folder: a digest, as a snapshot id holds slashes and may be long."""
    return hashlib.sha256(snapshot_id.encode()).hexdigest()[:24]


def part_file(prefix: str, index: int) -> str:
    """The name of a staged snapshot's `index`th part of `prefix` rows (`rows` or `quarantine`)."""
    return f"{prefix}-{index:05d}.parquet"


def parts(folder: Path, prefix: str) -> list[Path]:
    """A staged snapshot's parts of `prefix` rows, in the order they were written."""
    return sorted(Path(folder).glob(f"{prefix}-*.parquet"))


def export_path(name: str) -> str:
    """An export's file or folder relative to the warehouse, as its build's links name it (`exports/bmf`)."""
    return f"{EXPORTS}/{name}"


def owner_marker(dagster_home: Path) -> Path:
    """The file, in the Dagster instance's folder, naming the warehouse that instance serves."""
    return Path(dagster_home) / OWNER_MARKER


@dataclass(frozen=True)
class Layout:
    """The paths of the warehouse folder `root`."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    def table(self, name: str) -> Path:
        """A table's file (a link into the published tables build)."""
        return self.root / table_file(name)

    def table_folder(self, name: str) -> Path:
        """A table written as a folder of Parquet files (the bench's, a test's), read where no file is."""
        return self.root / name

    @property
    def database(self) -> Path:
        return self.root / DATABASE

    @property
    def listing(self) -> Path:
        return self.root / LISTING

    @property
    def staging(self) -> Path:
        return self.root / STAGING

    def staged(self, snapshot_id: str) -> Path:
        """The staging folder of one snapshot."""
        return self.staging / snapshot_key(snapshot_id)

    @property
    def lock(self) -> Path:
        return self.root / LOCK

    def builds(self, stage: str) -> Path:
        """The folder of a stage's builds and its `current` and `previous` links."""
        return self.root / BUILDS / stage

    def build_stages(self) -> list[Path]:
        """The folder of every stage that has builds."""
        root = self.root / BUILDS
        return sorted(folder for folder in root.iterdir() if folder.is_dir() and not folder.is_symlink()) if root.is_dir() else []

    @property
    def exports(self) -> Path:
        return self.root / EXPORTS

    def export(self, name: str) -> Path:
        """A file or folder under exports/ (`bmf`, `liger_csv`, `runs.ndjson`)."""
        return self.exports / name

    @property
    def report(self) -> Path:
        return self.root / REPORT
