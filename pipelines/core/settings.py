"""What the user sets: the environment variables, their defaults and how they are read, in one place.

Read once into a `Settings` when a command starts or the Dagster definitions load. Not `dg.EnvVar`: these are
not secrets the UI should hide, they have defaults, and a relative folder is resolved against the checkout or
the user's folder, none of which EnvVar does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
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


def _project_path(value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (PROJECT_ROOT if IN_CHECKOUT else Path.cwd()) / path


@dataclass(frozen=True)
class Settings:
    warehouse_dir: Path  # WAREHOUSE_DIR
    cache_dir: Path  # LIGER_CACHE_DIR: where git sources are cloned and a CSV source's content is kept
    source: str  # LIGER_SOURCE
    branch: str  # LIGER_BRANCH
    file_glob: str  # LIGER_FILE_GLOB
    streams: tuple[str, ...]  # LIGER_STREAMS: which of the git source's streams are read (`data`, `ci`)
    # LIGER_CI_SOURCE and LIGER_CI_BRANCH: the `ci` stream's repository and branch, None when unset (LIGER_SOURCE and
    # DEFAULT_CI_BRANCH). While both are unset, a source without that branch has an empty `ci` stream.
    ci_source: str | None
    ci_branch: str | None
    ci_file_glob: str  # LIGER_CI_FILE_GLOB
    baselines: tuple[str, ...]  # LIGER_BASELINES, comma-separated
    staging_workers: int  # LIGER_STAGING_WORKERS: how many snapshots are staged at once
    sensor_interval_s: int  # LIGER_SENSOR_INTERVAL_S: at least this long between two ticks of the upstream sensor


def read(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings in `environ` (default the process environment); an empty or unusable value means the default."""
    env = os.environ if environ is None else environ

    def text(name: str, default: str) -> str:
        return env.get(name, "").strip() or default

    def count(name: str, default: int) -> int:
        raw = text(name, "")
        return int(raw) if raw.isdigit() and int(raw) > 0 else default

    streams = tuple(dict.fromkeys(name.strip().lower() for name in text("LIGER_STREAMS", ",".join(STREAMS)).split(",") if name.strip()))
    unknown = [name for name in streams if name not in STREAMS]
    if unknown or not streams:
        raise ValueError(
            f"LIGER_STREAMS={env.get('LIGER_STREAMS')!r} names no stream or an unknown one: use a comma-separated subset of data,ci"
        )
    source = text("LIGER_SOURCE", DEFAULT_SOURCE)
    return Settings(
        warehouse_dir=_project_path(text("WAREHOUSE_DIR", "data/warehouse")),
        cache_dir=_project_path(text("LIGER_CACHE_DIR", "data/cache")),
        source=source,
        branch=text("LIGER_BRANCH", DEFAULT_BRANCH),
        file_glob=text("LIGER_FILE_GLOB", DEFAULT_FILE_GLOB),
        streams=streams,
        ci_source=text("LIGER_CI_SOURCE", "") or None,
        ci_branch=text("LIGER_CI_BRANCH", "") or None,
        ci_file_glob=text("LIGER_CI_FILE_GLOB", DEFAULT_CI_FILE_GLOB),
        baselines=tuple(p.strip() for p in text("LIGER_BASELINES", "").split(",") if p.strip()) or DEFAULT_BASELINES,
        staging_workers=count("LIGER_STAGING_WORKERS", min(2, os.cpu_count() or 1)),
        sensor_interval_s=count("LIGER_SENSOR_INTERVAL_S", 3600),
    )


def absolute_source(value: str, cwd: Path) -> str:
    """`value` (a LIGER_SOURCE) as given, unless it is a relative local path: that is made absolute
    against `cwd`, the folder the user ran the command in, before the command moves to DAGSTER_HOME."""
    # A colon marks a URL (https://, file://), an scp-like address (git@host:path) or a remote helper.
    if not value or value.startswith(("-", "~")) or ":" in value or Path(value).is_absolute():
        return value
    return str(cwd / value)


def use_absolute_source() -> None:
    """Make a relative `LIGER_SOURCE` (and `LIGER_CI_SOURCE`) in the environment absolute, for a command about to
    change directory."""
    for name in ("LIGER_SOURCE", "LIGER_CI_SOURCE"):
        if value := os.environ.get(name):
            os.environ[name] = absolute_source(value, Path.cwd())


def use_absolute_paths() -> None:
    """Make every folder the settings name absolute in the environment, for a command about to change directory:
    a relative `LIGER_SOURCE` is the user's folder, and so are the others outside a checkout."""
    use_absolute_source()
    current = read()
    os.environ["WAREHOUSE_DIR"] = str(current.warehouse_dir)
    os.environ["LIGER_CACHE_DIR"] = str(current.cache_dir)
