"""What the user sets: the environment variables, their defaults and how they are read, in one place.

Read once into a `Settings` by each entry point (the command line, the Dagster definitions as they load, the bench's
processes) from the environment it is handed, and passed down from there: no other module reads the environment
(tests/core/test_entry_points.py). A staging worker gets its `Settings` from the run that starts it. Not `dg.EnvVar`:
these are not secrets the UI should hide, they have defaults, and a relative folder is resolved against the checkout
or the user's folder, none of which EnvVar does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Running from a checkout of the repository (editable install, PYTHONPATH), or from an installed copy
# (a wheel in site-packages), which has no project folder: relative settings then mean the user's folder.
IN_CHECKOUT = (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "dagster.yaml").is_file()
DEFAULT_SOURCE = "https://github.com/linkedin/Liger-Kernel.git"
DEFAULT_BRANCH = "main"
DEFAULT_FILE_GLOB = "benchmark/data/all_benchmark_data*.csv"
DEFAULT_BASELINES = ("huggingface", "torch")
# Upstream's CI history (SPEC section 7): one folder per benchmarked commit on the `gh-pages` branch.
DEFAULT_CI_BRANCH = "gh-pages"
DEFAULT_CI_FILE_GLOB = "benchmarks/*/benchmark.csv"
STREAMS = ("data", "ci")
# The numeric settings' ranges (docs/configuration.md). A staging worker is a process that imports polars and
# holds one snapshot: 256 to 279 MB peak RSS each (measured staging the real history, and 2,000-row synthetic snapshots,
# on 1, 2 and 4 workers). Twice the cores keeps them busy while one waits on its disk; 16 (about 4.4 GB) is as much as a
# run should take. A sensor tick asks upstream (`git ls-remote`): more often than every 10 s only loads upstream's
# host; less often than daily, the daily schedule asks first.
MAX_STAGING_WORKERS = 16
# Measured on upstream's two streams (83 snapshots, 137k rows): 6-9 s in the run's process, 17-23 s with two workers
# (their start imports polars in each): below this many seconds of staging left, starting them costs more than it saves.
DEFAULT_PARALLEL_AFTER_S = 15
PARALLEL_AFTER_RANGE = (0, 3600)
SENSOR_INTERVAL_RANGE = (10, 86_400)
DEFAULT_SENSOR_INTERVAL_S = 3600


class SettingError(ValueError):
    """A setting the user gave that cannot be used; the message is one line naming the variable, its value and the fix."""


def staging_workers_range() -> tuple[int, int]:
    """1 to twice the cores, at most MAX_STAGING_WORKERS."""
    return 1, max(1, min(MAX_STAGING_WORKERS, 2 * (os.cpu_count() or 1)))


def _project_path(value: str, cwd: Path | None) -> Path:
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    return (PROJECT_ROOT if IN_CHECKOUT else Path.cwd() if cwd is None else cwd) / path


@dataclass(frozen=True)
class Settings:
    """Every setting, one field each. The fields without a default must be given wherever a `Settings` is made by hand
    (the Dagster resource `Warehouse` is generated from these fields and their defaults, pipelines/defs/resources.py)."""

    warehouse_dir: Path  # WAREHOUSE_DIR
    cache_dir: Path  # LIGER_CACHE_DIR: where git sources are cloned and a CSV source's content is kept
    source: str  # LIGER_SOURCE
    branch: str  # LIGER_BRANCH
    file_glob: str  # LIGER_FILE_GLOB
    baselines: tuple[str, ...]  # LIGER_BASELINES, comma-separated
    streams: tuple[str, ...] = STREAMS  # LIGER_STREAMS: which of the git source's streams are read (`data`, `ci`)
    # LIGER_CI_SOURCE and LIGER_CI_BRANCH: the `ci` stream's repository and branch, None when unset (LIGER_SOURCE and
    # DEFAULT_CI_BRANCH). While both are unset, a source without that branch has an empty `ci` stream.
    ci_source: str | None = None
    ci_branch: str | None = None
    ci_file_glob: str = DEFAULT_CI_FILE_GLOB  # LIGER_CI_FILE_GLOB
    staging_workers: int = 1  # LIGER_STAGING_WORKERS: how many snapshots are staged at once
    # LIGER_STAGING_PARALLEL_AFTER_S: the workers start when staging the rest in the run's process would take longer
    staging_parallel_after_s: int = DEFAULT_PARALLEL_AFTER_S
    sensor_interval_s: int = (
        DEFAULT_SENSOR_INTERVAL_S  # LIGER_SENSOR_INTERVAL_S: at least this long between two ticks of the upstream sensor
    )


def read(environ: Mapping[str, str], cwd: Path | None = None) -> Settings:
    """The settings in `environ` (the entry point's environment; `{}` for the defaults), relative paths meaning `cwd`
    (default the current folder) as docs/configuration.md says. A blank value (empty, spaces) means the default; one
    that cannot be used (a number out of its range, a word that is not one) is refused with a SettingError."""
    env = environ

    def text(name: str, default: str) -> str:
        return env.get(name, "").strip() or default

    def count(name: str, default: int, bounds: tuple[int, int]) -> int:
        raw = text(name, "")
        if not raw:
            return default
        low, high = bounds
        value = int(raw) if raw.isascii() and raw.isdigit() else None
        if value is None or not low <= value <= high:
            what = "is not a whole number" if value is None else "is out of range"
            raise SettingError(f"{name}={_shown(raw)} {what}: give one from {low} to {high}, or unset it for the default ({default})")
        return value

    given = {name.strip().lower() for name in text("LIGER_STREAMS", ",".join(STREAMS)).split(",") if name.strip()}
    unknown = given - set(STREAMS)
    # A set, read in STREAMS' order: `ci,data` is the same source as `data,ci`.
    streams = tuple(name for name in STREAMS if name in given)
    if unknown or not streams:
        raise SettingError(
            f"LIGER_STREAMS={_shown(env.get('LIGER_STREAMS', ''))} names no stream or an unknown one: "
            "use a comma-separated subset of data,ci, or unset it for both"
        )
    workers = staging_workers_range()
    source = absolute_source(text("LIGER_SOURCE", DEFAULT_SOURCE), cwd)
    return Settings(
        warehouse_dir=_project_path(text("WAREHOUSE_DIR", "data/warehouse"), cwd),
        cache_dir=_project_path(text("LIGER_CACHE_DIR", "data/cache"), cwd),
        source=source,
        branch=text("LIGER_BRANCH", DEFAULT_BRANCH),
        file_glob=text("LIGER_FILE_GLOB", DEFAULT_FILE_GLOB),
        streams=streams,
        ci_source=absolute_source(text("LIGER_CI_SOURCE", ""), cwd) or None,
        ci_branch=text("LIGER_CI_BRANCH", "") or None,
        ci_file_glob=text("LIGER_CI_FILE_GLOB", DEFAULT_CI_FILE_GLOB),
        baselines=tuple(p.strip() for p in text("LIGER_BASELINES", "").split(",") if p.strip()) or DEFAULT_BASELINES,
        staging_workers=count("LIGER_STAGING_WORKERS", min(2, os.cpu_count() or 1), workers),
        staging_parallel_after_s=count("LIGER_STAGING_PARALLEL_AFTER_S", DEFAULT_PARALLEL_AFTER_S, PARALLEL_AFTER_RANGE),
        sensor_interval_s=count("LIGER_SENSOR_INTERVAL_S", DEFAULT_SENSOR_INTERVAL_S, SENSOR_INTERVAL_RANGE),
    )


def for_source(
    source: str, branch: str = DEFAULT_BRANCH, file_glob: str = DEFAULT_FILE_GLOB, cache_dir: Path | None = None, **values
) -> Settings:
    """The default settings, reading `source` (its branch, file pattern, cache and any other setting given): how the
    bench and the tests name a source without an environment."""
    defaults = read({})
    return replace(defaults, source=source, branch=branch, file_glob=file_glob, cache_dir=cache_dir or defaults.cache_dir, **values)


def _shown(value: str) -> str:
    """A setting's value as a message shows it: quoted, on one line (escapes for control characters), at most 40 characters."""
    return repr(value if len(value) <= 40 else value[:39] + "…")


def absolute_source(value: str, cwd: Path | None = None) -> str:
    """`value` (a LIGER_SOURCE) as given, unless it is a relative local path: that is made absolute against `cwd`
    (default the folder the command runs in), so that the source's identity and the staging workers see one address.
    The current folder is asked only then: a process whose folder was deleted still reads absolute settings."""
    # A colon marks a URL (https://, file://), an scp-like address (git@host:path) or a remote helper.
    if not value or value.startswith(("-", "~")) or ":" in value or Path(value).is_absolute():
        return value
    return os.path.normpath((Path.cwd() if cwd is None else cwd) / value)  # `..` taken as the shell takes it in `cd`
