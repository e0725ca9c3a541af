"""Where things are: the environment variables a user sets, with their defaults."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Running from a checkout of the repository (editable install, PYTHONPATH), or from an installed copy
# (a wheel in site-packages), which has no project folder: relative settings then mean the user's folder.
IN_CHECKOUT = (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "dagster.yaml").is_file()
DEFAULT_SOURCE = "https://github.com/linkedin/Liger-Kernel.git"
DEFAULT_BRANCH = "main"
DEFAULT_FILE_GLOB = "benchmark/data/all_benchmark_data*.csv"
DEFAULT_BASELINES = ("huggingface", "torch")


def _project_path(value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (PROJECT_ROOT if IN_CHECKOUT else Path.cwd()) / path


def warehouse_dir() -> Path:
    """`WAREHOUSE_DIR`, default `data/warehouse` (relative paths are taken from the project root in a
    checkout, else from the current folder)."""
    return _project_path(os.environ.get("WAREHOUSE_DIR") or "data/warehouse")


def cache_dir() -> Path:
    """`LIGER_CACHE_DIR`, default `data/cache`: where git sources are cloned and a CSV source's content is kept."""
    return _project_path(os.environ.get("LIGER_CACHE_DIR") or "data/cache")


def source() -> str:
    return os.environ.get("LIGER_SOURCE") or DEFAULT_SOURCE


def absolute_source(value: str, cwd: Path) -> str:
    """`value` (a LIGER_SOURCE) as given, unless it is a relative local path: that is made absolute
    against `cwd`, the folder the user ran the command in, before the command moves to DAGSTER_HOME."""
    # A colon marks a URL (https://, file://), an scp-like address (git@host:path) or a remote helper.
    if not value or value.startswith(("-", "~")) or ":" in value or Path(value).is_absolute():
        return value
    return str(cwd / value)


def use_absolute_source() -> None:
    """Make a relative `LIGER_SOURCE` in the environment absolute, for a command about to change directory."""
    if value := os.environ.get("LIGER_SOURCE"):
        os.environ["LIGER_SOURCE"] = absolute_source(value, Path.cwd())


def use_absolute_paths() -> None:
    """Make every folder the settings name absolute in the environment, for a command about to change directory:
    a relative `LIGER_SOURCE` is the user's folder, and so are the others outside a checkout."""
    use_absolute_source()
    os.environ["WAREHOUSE_DIR"] = str(warehouse_dir())
    os.environ["LIGER_CACHE_DIR"] = str(cache_dir())


def branch() -> str:
    return os.environ.get("LIGER_BRANCH") or DEFAULT_BRANCH


def file_glob() -> str:
    return os.environ.get("LIGER_FILE_GLOB") or DEFAULT_FILE_GLOB


def baselines() -> tuple[str, ...]:
    """`LIGER_BASELINES`, comma-separated, default `huggingface,torch`."""
    raw = os.environ.get("LIGER_BASELINES")
    if not raw:
        return DEFAULT_BASELINES
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def staging_workers() -> int:
    """`LIGER_STAGING_WORKERS`, default the number of cores up to 2: how many snapshots are staged at once."""
    raw = os.environ.get("LIGER_STAGING_WORKERS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return min(2, os.cpu_count() or 1)


def sensor_interval_s() -> int:
    """`LIGER_SENSOR_INTERVAL_S`, default 3600: at least this long between two ticks of the upstream sensor."""
    raw = os.environ.get("LIGER_SENSOR_INTERVAL_S", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else 3600
