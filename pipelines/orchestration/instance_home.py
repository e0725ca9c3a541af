"""The Dagster instance of a DAGSTER_HOME, opened from whatever folder the command runs in.

The project's `dagster.yaml` names its storage relative to the project root, and Dagster resolves a relative
`base_dir` against the current folder. Opening the instance with those paths resolved against its home keeps the
process where the user started it, so relative settings keep the meaning they had there.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml
from dagster._core.instance.config import dagster_instance_config
from dagster._core.instance.ref import InstanceRef

from pipelines.core.errors import UserError


def open_instance(home: Path) -> dg.DagsterInstance:
    """The instance configured by `home`/dagster.yaml, every relative storage folder taken from `home`."""
    try:
        config, _ = dagster_instance_config(str(home))
    except (yaml.YAMLError, dg.DagsterInvalidConfigError) as exc:
        # Dagster's message spans lines (the YAML position, each config error): its first and last say which and where.
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        detail = lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"
        raise UserError(
            f"{home / 'dagster.yaml'} is not a Dagster instance configuration ({detail}): fix it, or point DAGSTER_HOME elsewhere"
        ) from None
    overrides = {name: anchored for name, section in config.items() if (anchored := _anchored(section, home)) != section}
    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides=overrides))


def _anchored(value, home: Path):
    if not isinstance(value, dict):
        return value
    return {
        key: str(home / item) if key == "base_dir" and isinstance(item, str) and not Path(item).is_absolute() else _anchored(item, home)
        for key, item in value.items()
    }
