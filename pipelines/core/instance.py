"""The Dagster instance `python -m pipelines` uses when DAGSTER_HOME is unset.

In a checkout it is the project root, whose `dagster.yaml` keeps the instance in `data/dagster/`. An
installed copy has no project folder: it writes the same configuration, shipped in the package, into
`dagster/` beside the warehouse folder (`data/dagster/` beside the default `data/warehouse/`), so the
storage lands where a checkout would put it.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from pipelines.core import settings
from pipelines.core.layout import owner_marker
from pipelines.storage import store

CONFIG = "dagster.yaml"
# The checkout's storage paths, relative to the project root, made relative to the instance folder itself.
_STORAGE = re.compile(r"^(\s*base_dir: )data/dagster(?:/(\S+))?$", re.MULTILINE)
_HEADER = "# Written by `python -m pipelines` from the project's dagster.yaml; paths are relative to this folder.\n"


def default_home(current: settings.Settings) -> Path:
    """The project root in a checkout, else `dagster/` beside `current`'s WAREHOUSE_DIR."""
    return settings.PROJECT_ROOT if settings.IN_CHECKOUT else current.warehouse_dir.parent / "dagster"


def packaged_config() -> str:
    """The project's dagster.yaml, with its storage under the folder it is written in."""
    text = resources.files("pipelines").joinpath(CONFIG).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):  # the opening comment is about the project root
        lines.pop(0)
    return _HEADER + _STORAGE.sub(lambda m: m.group(1) + (m.group(2) or "."), "".join(lines))


def ensure_home(home: Path) -> Path:
    """`home`, holding a dagster.yaml: the packaged one written there when it has none (one already there is
    the user's and is kept)."""
    config = home / CONFIG
    if not config.is_file():
        home.mkdir(parents=True, exist_ok=True)
        store.write_bytes_atomic(config, packaged_config().encode())
    return home


class InstanceTaken(RuntimeError):
    """The Dagster instance already serves another warehouse: sharing it would mix two histories' partitions."""


def claim(home: Path, warehouse: Path) -> None:
    """Have the instance in `home` serve `warehouse`, or refuse: one instance holds one warehouse's partitions (the
    snapshots of its source), and two warehouses in one would each try to stage the other's. A claim whose warehouse
    is gone is taken over."""
    marker = owner_marker(home)
    mine = str(warehouse.resolve())
    try:
        held = marker.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        held = ""
    except OSError:
        return  # an unreadable instance folder: Dagster says so when it opens it
    if held and held != mine and Path(held).is_dir():
        raise InstanceTaken(
            f"the Dagster instance in {home} serves the warehouse {held}, not WAREHOUSE_DIR {mine}: give this warehouse an "
            f"instance of its own (set DAGSTER_HOME to another folder; `python -m pipelines` writes its dagster.yaml there), "
            f"or set WAREHOUSE_DIR={held}"
        )
    if held != mine:
        home.mkdir(parents=True, exist_ok=True)
        store.write_bytes_atomic(marker, f"{mine}\n".encode())
