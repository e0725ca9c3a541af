"""The settings as Dagster's resource `Warehouse`, its fields generated from `Settings`' (one conversion each way)."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

import dagster as dg

from pipelines.core import lifetime
from pipelines.core.settings import Settings
from pipelines.ingest.source.upstream_changes import recorded_source
from pipelines.statistics import db
from pipelines.storage import store

_TYPES = typing.get_type_hints(Settings)


def _config_type(kind: object) -> object:
    """The type Dagster's config takes for a setting's: a folder as text, a tuple as a list, an unset value as ''."""
    if kind is Path or kind == (str | None):
        return str
    return list[str] if typing.get_origin(kind) is tuple else kind


def _to_config(value: object) -> object:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return "" if value is None else value


def _from_config(kind: object, value: object) -> object:
    if kind is Path:
        return Path(typing.cast(str, value))
    if typing.get_origin(kind) is tuple:
        return tuple(typing.cast(list, value))
    return (value or None) if kind == (str | None) else value


class _WarehouseResource(dg.ConfigurableResource):
    """What the assets do with the settings; the fields themselves are added by `Warehouse` below."""

    @classmethod
    def of(cls, current: Settings) -> Warehouse:
        return Warehouse(**{field.name: _to_config(getattr(current, field.name)) for field in dataclasses.fields(Settings)})

    @property
    def settings(self) -> Settings:
        return Settings(
            **{field.name: _from_config(_TYPES[field.name], getattr(self, field.name)) for field in dataclasses.fields(Settings)}
        )

    @property
    def path(self) -> Path:
        return self.settings.warehouse_dir

    def writing(self) -> AbstractContextManager[None]:
        """Hold the warehouse for writing: its file lock (Dagster's pool serializes Dagster's writers, the lock
        also the CLI's), and a table commit a killed writer left half done is finished first. A step process
        dies with its run's process, so that nothing of a killed run writes after it."""
        lifetime.step_dies_with_run()
        return store.writer_lock(self.path)

    def reading(self) -> AbstractContextManager[db.Session]:
        """A read-only session over warehouse.duckdb, never blocked by a writer."""
        return db.session(self.path)


# Generated rather than written out, so that a new setting is one field of `Settings` and nothing here (a class
# statement with its annotations made from the dataclass's, as Dagster's pydantic-based resources read them).
_FIELDS = dataclasses.fields(Settings)
Warehouse = type(
    "Warehouse",
    (_WarehouseResource,),
    {
        "__module__": __name__,
        "__doc__": "The settings (`pipelines.core.settings.Settings`) as Dagster's resource: one field per setting, of the "
        "same name (the UI shows each), required where the dataclass has no default; `settings` is the one value the steps take.",
        "__annotations__": {field.name: _config_type(_TYPES[field.name]) for field in _FIELDS},
        **{field.name: _to_config(field.default) for field in _FIELDS if field.default is not dataclasses.MISSING},
    },
)


def built_from(current: Settings, environ: Mapping[str, str]) -> Settings:
    """`current` with the source (and streams) the warehouse records, for each of LIGER_SOURCE and LIGER_STREAMS unset
    in `environ` (the environment `current` was read from): the UI, the daemon and `materialize` started without the
    variables keep reading what the warehouse holds (a bundle, offline) instead of being refused as another source.
    A new warehouse reads upstream."""
    if environ.get("LIGER_SOURCE", "").strip() or (recorded := recorded_source(current.warehouse_dir)) is None:
        return current
    source, streams = recorded
    if environ.get("LIGER_STREAMS", "").strip() or streams is None:
        return replace(current, source=source)
    return replace(current, source=source, streams=streams)
