import importlib
from pathlib import Path

import dagster as dg

from pipelines.core import settings


@dg.definitions
def defs() -> dg.Definitions:
    if settings.IN_CHECKOUT:
        return dg.load_from_defs_folder(path_within_project=Path(__file__).resolve().parent)
    # An installed copy has no pyproject.toml ([tool.dg]) to find the defs folder by: name it directly.
    return dg.ComponentTree.from_module(importlib.import_module("pipelines.defs"), project_root=settings.PROJECT_ROOT).build_defs()
