"""The Dagster definitions: an entry point. `dg dev`, the daemon and the code servers load `defs`, which reads the
settings once from the environment; `python -m pipelines materialize` hands its own to `definitions_for`."""

import importlib
import os
from collections.abc import Mapping
from pathlib import Path

import dagster as dg

from pipelines.core import instance, settings
from pipelines.core.settings import Settings
from pipelines.defs.resources import Warehouse, built_from
from pipelines.defs.source.sensors import upstream_data_sensor_every


def definitions_for(current: Settings) -> dg.Definitions:
    """Every asset, check, job and schedule of the defs folder, with what is made from the settings: the `warehouse`
    resource and the upstream sensor's interval."""
    if settings.IN_CHECKOUT:
        folder = dg.load_from_defs_folder(path_within_project=Path(__file__).resolve().parent)
    else:
        # An installed copy has no pyproject.toml ([tool.dg]) to find the defs folder by: name it directly.
        folder = dg.ComponentTree.from_module(importlib.import_module("pipelines.defs"), project_root=settings.PROJECT_ROOT).build_defs()
    made = dg.Definitions(resources={"warehouse": Warehouse.of(current)}, sensors=[upstream_data_sensor_every(current.sensor_interval_s)])
    return dg.Definitions.merge(folder, made)


def settings_of(environ: Mapping[str, str]) -> Settings:
    """The settings in `environ`; while LIGER_SOURCE is unset, those of the source the warehouse was built from
    (`built_from`)."""
    return built_from(settings.read(environ), environ)


@dg.definitions
def defs() -> dg.Definitions:
    environ = os.environ  # the one read of the environment where Dagster loads the definitions
    current = settings_of(environ)
    if home := environ.get("DAGSTER_HOME"):
        # The daemon, the webserver and `dg dev` load the definitions on the instance in DAGSTER_HOME.
        instance.claim(Path(home), current.warehouse_dir)
    return definitions_for(current)
