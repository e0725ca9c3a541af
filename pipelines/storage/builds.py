"""Builds, not stamps: every stage after staging writes its whole output as one build folder named by its key.

    WAREHOUSE_DIR/_builds/<stage>/<key>/        one complete build: its files (in files/) and manifest.json, written last
    WAREHOUSE_DIR/_builds/<stage>/current       a link to the published build
    WAREHOUSE_DIR/_builds/<stage>/previous      a link to the one before it, kept for readers still on it
    WAREHOUSE_DIR/runs.parquet, warehouse.duckdb, report, ...
                                                links through `current`, made once: what readers open

`key = digest(stage, code version, input keys, parameters)`: the same inputs read by the same code make the
same build, so a stage whose key has a complete build already does nothing, and the key is the data version
the stage's assets report to Dagster (whose staleness is the same code versions and the same inputs' data
versions: the skip and the UI cannot disagree). A build is made under a temporary name, its manifest
written last, then renamed whole; it is published by replacing the `current` link, one atomic rename. A
process killed at any moment leaves `current` on the last good build, and a temporary folder the next build of
that stage sweeps. State is where a folder sits (as in dlt's load packages), never a stamp beside the output.
The folder and file names are `core.layout`'s.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.core.canonical import canonical_json
from pipelines.core.layout import CURRENT, FILES, INPUT_ROWS, INPUTS, MANIFEST, PREVIOUS, Layout
from pipelines.storage import store


def build_key(stage: str, code: str, inputs: object, parameters: object = None) -> str:
    """The key of a stage's build: changes with the stage's code version, any input's key, or a parameter."""
    parts = {"stage": stage, "code": code, "inputs": inputs, "parameters": parameters}
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Build:
    stage: str
    key: str
    folder: Path
    # Each file's path in the folder -> its size in bytes, as the build wrote it.
    files: Mapping[str, int]
    # What the build returned (row counts, a summary): what a run that keeps the build reports.
    result: Any

    @property
    def content(self) -> Path:
        """The folder of what the build publishes."""
        return self.folder / FILES

    def damage(self) -> str | None:
        """None when every file the build wrote is there with its size; else the first that is not, named."""
        for name, size in sorted(self.files.items()):
            path = self.content / name
            if not path.is_file():
                return f"{path} was deleted"
            if path.stat().st_size != size:
                return f"{path} is not the file its build wrote ({path.stat().st_size} bytes, not {size})"
        return None

    def inputs(self) -> dict[str, str]:
        """What the build recorded with `record_inputs` (file -> digest of its inputs); empty when it recorded none."""
        found = store.read_json(self.folder / INPUTS)
        return found if isinstance(found, dict) else {}

    @property
    def input_rows(self) -> Path:
        """Where the build recorded the digests of its files' rows (`input_rows_path`), if it did."""
        return self.folder / INPUT_ROWS


def input_rows_path(content: Path) -> Path:
    """Where a build's `write(content)` records the digests of its files' rows, beside the manifest."""
    return content.parent / INPUT_ROWS


def record_inputs(content: Path, digests: Mapping[str, str]) -> None:
    """Record, from inside a build's `write(content)`, the digest of each file's inputs (beside the manifest, not
    among what the build publishes): a later build of the stage copies a file whose digest is the same."""
    store.write_json_atomic(content.parent / INPUTS, dict(digests))


class Stage:
    """The builds of one stage of one warehouse."""

    def __init__(self, warehouse: Path, name: str):
        self.warehouse = Path(warehouse)
        self.name = name
        self.root = Layout(self.warehouse).builds(name)

    def _read(self, folder: Path) -> Build | None:
        manifest = store.read_json(folder / MANIFEST)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
            return None
        return Build(self.name, folder.name, folder, manifest["files"], manifest.get("result"))

    def current(self) -> Build | None:
        """The published build; None before the first one (or when its link was deleted by hand)."""
        link = self.root / CURRENT
        return self._read(self.root / os.readlink(link)) if link.is_symlink() else None

    def get(self, key: str) -> Build | None:
        """The complete build of `key` (its manifest written), intact or not; None when there is none."""
        return self._read(self.root / key)

    def make(self, key: str, write: Callable[[Path], Any]) -> Build:
        """Run `write(folder)` into a new temporary build's files folder, record every file it wrote and what it
        returned in the manifest, and rename the build to `key` (replacing a damaged build of the same key). Not
        published."""
        self.sweep()
        final = self.root / key
        temporary = store.temp_path(final)
        content = temporary / FILES
        content.mkdir(parents=True)
        try:
            result = write(content)
            files = {str(path.relative_to(content)): path.stat().st_size for path in sorted(content.rglob("*")) if path.is_file()}
            store.write_json_atomic(temporary / MANIFEST, {"stage": self.name, "key": key, "files": files, "result": result})
            store.swap_folder(temporary, final)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        return Build(self.name, key, final, files, result)

    def discard(self, build: Build) -> None:
        """Delete a build that is not to be published (it failed a blocking check): the next run judges a new one."""
        if self.current() is None or self.current().key != build.key:
            shutil.rmtree(build.folder, ignore_errors=True)

    def publish(self, build: Build, links: Mapping[str, str] | None = None) -> None:
        """Make `build` the current one (one rename of the `current` link), keep the one it replaces as `previous`,
        delete the others, and make sure each published path (relative to the warehouse) links to its file in
        `current` (`links`: published path -> path in the build's files, "" for the files folder itself)."""
        before = self.current()
        if before is None or before.key != build.key:
            _link(self.root / CURRENT, build.key)
            if before is not None:
                _link(self.root / PREVIOUS, before.key)
        for published, inside in (links or {}).items():
            target = self.root / CURRENT / FILES / inside if inside else self.root / CURRENT / FILES
            _link(self.warehouse / published, os.path.relpath(target, (self.warehouse / published).parent))
        self._prune()

    def problem(self, links: Mapping[str, str] | None = None) -> str | None:
        """What is wrong with what readers see of this stage, or None: no build published, a file of the published
        one deleted or resized, or a published path deleted or pointing elsewhere (the next run puts each right)."""
        current = self.current()
        if current is None:
            return f"no {self.name} build is published in {self.root} (or its `{CURRENT}` link was deleted)"
        damage = current.damage()
        if damage is not None:
            return damage
        for published, inside in (links or {}).items():
            path = self.warehouse / published
            if not path.exists() or path.resolve() != (current.content / inside).resolve():
                return f"{path} was deleted or replaced: it is not the published {self.name} build's"
        return None

    def _prune(self) -> None:
        kept = {os.readlink(self.root / name) for name in (CURRENT, PREVIOUS) if (self.root / name).is_symlink()}
        for folder in self.root.iterdir():
            if folder.is_dir() and not folder.is_symlink() and folder.name not in kept and not folder.name.startswith("."):
                shutil.rmtree(folder, ignore_errors=True)

    def sweep(self) -> None:
        """Delete what a killed build left: temporary folders and links. Hold the writer lock."""
        if self.root.is_dir():
            store.sweep(self.root)


def _link(path: Path, target: str) -> None:
    """Make `path` a symbolic link to `target`, replacing what is there in one rename (a folder, from a warehouse
    older than builds, is swapped aside and deleted)."""
    if path.is_symlink() and os.readlink(path) == target:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = store.temp_path(path)
    os.symlink(target, temporary)
    if path.is_dir() and not path.is_symlink():
        store.swap_folder(temporary, path)
        return
    os.replace(temporary, path)
    store.fsync_dir(path.parent)
