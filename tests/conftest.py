"""Shared fixtures. Real-data fixtures skip when ../shared is absent, and fail when REQUIRE_REAL_DATA=1."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from postgres import (  # noqa: F401 (fixtures)
    dagster_instance,
    instance_kind,
    instance_kind_home,
    postgres_server,
)

from pipelines.core import settings

# Helpers that test modules import and also load as plugins (pytest_plugins): their asserts are rewritten
# as a test module's are, which pytest can only do when it is told before their first import.
pytest.register_assert_rewrite("report_reading", "statistics_warehouse")

SHARED = settings.PROJECT_ROOT.parent / "shared"
BUNDLE = SHARED / "liger-data" / "liger-benchmark-data.bundle"
# Upstream with both streams: `main`'s benchmark/data/ and `gh-pages`' CI history (SPEC section 7).
UPSTREAM_BUNDLE = SHARED / "liger-data" / "liger-upstream.bundle"
LATEST = SHARED / "liger-data" / "latest"
SEED_RUN = SHARED / "examples" / "seed-run.json"
FILE_GLOB = "benchmark/data/all_benchmark_data*.csv"


def require_real(path: Path) -> Path:
    if path.exists():
        return path
    message = f"real data not found at {path} (it lives in ../shared beside the project, not in a fresh clone)"
    if os.environ.get("REQUIRE_REAL_DATA") == "1":
        pytest.fail(f"REQUIRE_REAL_DATA=1 but {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
def real_bundle() -> Path:
    return require_real(BUNDLE)


@pytest.fixture(scope="session")
def seed_run_path() -> Path:
    return require_real(SEED_RUN)


@pytest.fixture(scope="session")
def real_clone(real_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain clone of the bundle, for tests that compare with `git show`."""
    target = tmp_path_factory.mktemp("liger-clone") / "liger"
    subprocess.run(["git", "clone", "--quiet", str(real_bundle), str(target)], check=True)
    return target


@pytest.fixture(scope="session")
def upstream_bundle() -> Path:
    return require_real(UPSTREAM_BUNDLE)


def build_warehouse(
    warehouse: Path, source: str, cache: Path, branch: str = "main", file_glob: str = FILE_GLOB, streams: tuple[str, ...] = settings.STREAMS
) -> Path:
    """Ingest `source` into `warehouse` with the library (no Dagster): sync, stage, tables, DuckDB."""
    from pipelines.assemble.tables_build import build_tables
    from pipelines.core.settings import for_source
    from pipelines.ingest.steps import stage_new, sync
    from pipelines.storage import store

    source_settings = for_source(source, branch, file_glob, cache, streams=streams)
    with store.writer_lock(warehouse):
        listing = sync(warehouse, source_settings)
        stage_new(warehouse, source_settings, listing)
        build_tables(warehouse, listing)
    return warehouse


@pytest.fixture(scope="session")
def real_warehouse(real_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole bundle history ingested once per test session (tables only; build the DuckDB
    file with pipelines.statistics.database_build.build_database if a test needs it)."""
    root = tmp_path_factory.mktemp("real-warehouse")
    return build_warehouse(root / "warehouse", str(real_bundle), root / "cache")


@pytest.fixture(scope="session")
def upstream_warehouse(upstream_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both streams of the upstream bundle ingested once per test session (tables only)."""
    root = tmp_path_factory.mktemp("upstream-warehouse")
    return build_warehouse(root / "warehouse", str(upstream_bundle), root / "cache", streams=("data", "ci"))


def damaged_inside(parquet: Path) -> None:
    """Every page of a Parquet file overwritten and its footer kept whole: it lists and counts its rows, and its data
    does not read (what only reading every page finds)."""
    data = bytearray(parquet.read_bytes())
    pages_end = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    data[4:pages_end] = os.urandom(pages_end - 4)
    parquet.write_bytes(bytes(data))


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {
        **os.environ,
        **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}),
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
    }
    result = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return result.stdout.strip()


class UpstreamRepo:
    """A small git repository shaped like upstream: benchmark/data/all_benchmark_data*.csv on `main`."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "--quiet", "--initial-branch=main")

    def commit(self, files: dict[str, str], message: str, date: str = "2025-01-01T00:00:00+00:00") -> str:
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            git(self.path, "add", name)
        git(self.path, "commit", "--quiet", "-m", message, date=date)
        return git(self.path, "rev-parse", "HEAD")


@pytest.fixture
def upstream_repo(tmp_path: Path) -> UpstreamRepo:
    return UpstreamRepo(tmp_path / "upstream")


HEADER = (
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,"
    "y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version"
)


def liger_row(
    kernel: str = "rms_norm",
    provider: str = "liger",
    mode: str = "forward",
    metric: str = "speed",
    unit: str = "ms",
    x_name: str = "H",
    x_label: str = "hidden size",
    x_value: str = "1024",
    y50: str = "0.5",
    y20: str | None = None,
    y80: str | None = None,
    config: str = '{"M": 2048, "dtype": "torch.bfloat16"}',
    gpu: str = "NVIDIA A100-SXM4-80GB",
    timestamp: str = "2025-01-01 10:00:00",
    version: str = "0.5.0",
) -> str:
    """One CSV line in upstream's format (the config is quoted as upstream's csv writer quotes it). Unless given,
    y20 is 0.4 and y80 0.6, or y50 itself where that would put the quantiles out of order (a row then quarantined)."""
    y20 = y20 if y20 is not None else _bound(y50, "0.4", min)
    y80 = y80 if y80 is not None else _bound(y50, "0.6", max)
    quoted = '"' + config.replace('"', '""') + '"'
    return ",".join([kernel, provider, mode, metric, unit, x_name, x_label, x_value, y50, y20, y80, quoted, gpu, timestamp, version])


def _bound(y50: str, default: str, pick) -> str:
    try:
        return y50 if pick(float(y50), float(default)) == float(y50) and float(y50) != float(default) else default
    except ValueError:
        return default


def liger_csv(*rows: str) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


@pytest.fixture(autouse=True)
def no_leftover_defs_state_storage():
    """Each test starts with no current defs state storage. An instance an earlier test left open (a sensor or
    schedule context not closed) puts its finished instance back as current when it is collected, and loading
    definitions then fails with "unable to open database file": said here instead, where it can be traced."""
    from dagster._core.storage.defs_state.base import DefsStateStorage

    assert DefsStateStorage.get() is None, (
        "an earlier test on this worker left a Dagster instance open; close contexts with `with` (see test_operations)"
    )
