"""The Dagster instance of a DAGSTER_HOME, opened from whatever folder the command runs in.

The project's `dagster.yaml` names its storage relative to the project root, and Dagster resolves a relative
`base_dir` against the current folder. Opening the instance with those paths resolved against its home keeps the
process where the user started it, so relative settings keep the meaning they had there. Only public Dagster API:
the configuration with its folders made absolute is written beside `dagster.yaml` and opened with
`DagsterInstance.from_config`, whose home stays the instance's folder (where Dagster keeps what it is not told).
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from pipelines.core.errors import UserError
from pipelines.storage import store

CONFIG = "dagster.yaml"
# dagster.yaml with every relative base_dir taken from the home (and, for a run whose output goes to the terminal,
# with no capture of it); rewritten whenever it differs.
ANCHORED = {True: ".dagster-anchored.yaml", False: ".dagster-anchored-uncaptured.yaml"}
# Dagster's compute log manager that captures nothing, named as dagster.yaml names any (a module and a class).
UNCAPTURED = {"module": "dagster._core.storage.noop_compute_log_manager", "class": "NoOpComputeLogManager"}


def open_instance(home: Path, capture_output: bool = True) -> dg.DagsterInstance:
    """The instance configured by `home`/dagster.yaml, every relative storage folder taken from `home`. Without
    `capture_output`, a run's standard output and error are not captured into the instance's compute logs: they
    stay the terminal's (the CLI's in-process run), and its event log keeps every event either way."""
    try:
        config = yaml.safe_load((home / CONFIG).read_text(encoding="utf-8")) or {}
        opened = _anchored(config, home)
        if isinstance(opened, dict) and not capture_output:
            opened = {**opened, "compute_logs": UNCAPTURED}
        name = CONFIG
        if opened != config:
            name = ANCHORED[capture_output]
            text = yaml.safe_dump(opened, sort_keys=False).encode()
            if not (home / name).is_file() or (home / name).read_bytes() != text:
                store.write_bytes_atomic(home / name, text)
        return dg.DagsterInstance.from_config(str(home), config_filename=name)
    except (yaml.YAMLError, dg.DagsterInvalidConfigError) as exc:
        # Dagster's message spans lines (the YAML position, each config error): its first and last say which and where.
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        detail = lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"
        raise UserError(
            f"{home / CONFIG} is not a Dagster instance configuration ({detail}): fix it, or point DAGSTER_HOME elsewhere"
        ) from None


def _anchored(value, home: Path):
    if not isinstance(value, dict):
        return value
    return {
        key: str(home / item) if key == "base_dir" and isinstance(item, str) and not Path(item).is_absolute() else _anchored(item, home)
        for key, item in value.items()
    }
