"""The project installed from a wheel (`pip install .`, not editable) runs from any folder: its SQL and its
default Dagster instance ship in the package, and relative settings are taken from the user's folder."""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import duckdb
import pytest
from conftest import liger_csv, liger_row

from pipelines.core import instance, layout, settings, sql_files
from pipelines.statistics import db

DATA = "benchmark/data/all_benchmark_data.csv"
# What the build does not need: a checkout's data, caches and earlier builds.
NOT_BUILT = shutil.ignore_patterns(".git", ".venv", "data", "build", "__pycache__", "*.egg-info", ".pytest_cache")


def _fresh_venv(root: Path) -> Path:
    """A virtual environment without our package; its dependencies come from the interpreter running the tests
    (a path line in a .pth file, so that environment's own .pth files, such as an editable install, are not run)."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _without_checkout(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in ("PYTHONPATH", "DAGSTER_HOME", "WAREHOUSE_DIR", "LIGER_CACHE_DIR")}


def _install(source: Path, root: Path, editable: bool) -> tuple[Path, dict[str, str]]:
    """A fresh environment with the project in `source` installed into it, and an environment without the checkout's."""
    python = _fresh_venv(root)
    env = _without_checkout(os.environ)
    command = [python, "-m", "pip", "install", "--no-deps", "--no-cache-dir", "--quiet", *(["-e"] if editable else []), str(source)]
    installed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python, env


def _materialize(python: Path, env: dict[str, str], cwd: Path, upstream_repo) -> None:
    upstream_repo.commit({DATA: liger_csv(liger_row(), liger_row(provider="huggingface", y50="1.0", y20="0.9", y80="1.1"))}, "one")
    result = subprocess.run(
        [python, "-m", "pipelines", "materialize"], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "materialized every asset" in result.stdout


def _statistic_counts(warehouse: Path) -> dict[str, int]:
    with duckdb.connect(str(layout.Layout(warehouse).database), read_only=True) as con:
        return {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in db.STATISTICS}


def _package(python: Path, env: dict[str, str], cwd: Path) -> Path:
    located = subprocess.run(
        [python, "-c", "import pipelines; print(pipelines.__file__)"], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return Path(located.stdout.strip()).parent


@pytest.mark.slow
def test_a_wheel_install_materializes_from_another_folder(tmp_path, upstream_repo):
    # Built from a copy, as pip builds in the source folder (build/, *.egg-info) and the checkout stays clean.
    source = tmp_path / "source"
    shutil.copytree(settings.PROJECT_ROOT, source, symlinks=True, ignore=NOT_BUILT)
    python, env = _install(source, tmp_path, editable=False)
    shutil.rmtree(source)  # nothing may come from the folder it was built from
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    package = _package(python, env, elsewhere)
    assert package.is_relative_to(python.parent.parent), package  # the installed copy, not the checkout
    assert sorted(p.relative_to(package / "sql").as_posix() for p in (package / "sql").rglob("*.sql")) == sorted(
        f"{name}.sql" for name in sql_files.names()
    )

    # DAGSTER_HOME unset, relative WAREHOUSE_DIR, LIGER_CACHE_DIR unset.
    _materialize(python, {**env, "WAREHOUSE_DIR": "warehouse", "LIGER_SOURCE": str(upstream_repo.path)}, elsewhere, upstream_repo)

    # Relative settings are the user's folder; the instance is the packaged one, beside the warehouse.
    assert (elsewhere / "dagster" / "dagster.yaml").read_text() == instance.packaged_config()
    assert (elsewhere / "dagster" / "storage").is_dir()
    assert (elsewhere / "data" / "cache").is_dir()
    assert _statistic_counts(elsewhere / "warehouse")["provider_comparisons"] > 0

    # The ad hoc queries' SQL ships too: `compare` reads sql/queries/compare.sql.
    compared = subprocess.run(
        [python, "-m", "pipelines", "compare", "--kernel", "rms_norm", "--gpu", "NVIDIA A100-SXM4-80GB"],
        cwd=elsewhere,
        env={**env, "WAREHOUSE_DIR": "warehouse"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert compared.returncode == 0, compared.stderr
    assert "huggingface" in compared.stdout


@pytest.mark.slow
def test_an_editable_install_keeps_the_checkout_layout(tmp_path, upstream_repo):
    """An editable install runs the checkout: relative settings and the instance are the project root's."""
    source = tmp_path / "source"
    shutil.copytree(settings.PROJECT_ROOT, source, symlinks=True, ignore=NOT_BUILT)
    python, env = _install(source, tmp_path, editable=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _package(python, env, elsewhere) == source / "pipelines"

    _materialize(python, {**env, "WAREHOUSE_DIR": "data/w", "LIGER_SOURCE": str(upstream_repo.path)}, elsewhere, upstream_repo)

    assert (source / "data" / "dagster" / "storage").is_dir()
    assert (source / "data" / "cache").is_dir()
    assert _statistic_counts(source / "data" / "w")["provider_comparisons"] > 0
    assert not any(elsewhere.iterdir())
