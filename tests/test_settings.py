"""The settings are read in one place: defaults, unusable values, relative folders, and the README's table."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from pipelines.core import settings
from pipelines.core.settings import PROJECT_ROOT, read


def test_an_empty_environment_gives_every_default():
    got = read({})
    assert got.source == "https://github.com/linkedin/Liger-Kernel.git"
    assert (got.branch, got.file_glob) == ("main", "benchmark/data/all_benchmark_data*.csv")
    assert got.baselines == ("huggingface", "torch")
    assert got.warehouse_dir == PROJECT_ROOT / "data" / "warehouse"
    assert got.cache_dir == PROJECT_ROOT / "data" / "cache"
    assert 1 <= got.staging_workers <= 2
    assert got.sensor_interval_s == 3600


def test_values_are_read_and_blank_or_unusable_ones_mean_the_default(tmp_path: Path):
    got = read(
        {
            "WAREHOUSE_DIR": str(tmp_path / "w"),
            "LIGER_CACHE_DIR": "elsewhere/cache",
            "LIGER_BRANCH": "  ",
            "LIGER_BASELINES": " torch , ,huggingface",
            "LIGER_STAGING_WORKERS": "0",
            "LIGER_SENSOR_INTERVAL_S": "-5",
        }
    )
    assert got.warehouse_dir == tmp_path / "w"
    assert got.cache_dir == PROJECT_ROOT / "elsewhere" / "cache"  # relative: from the checkout's root
    assert got.branch == "main"
    assert got.baselines == ("torch", "huggingface")
    assert got.sensor_interval_s == 3600
    assert got.staging_workers == read({}).staging_workers
    assert read({"LIGER_BASELINES": ","}).baselines == ("huggingface", "torch")
    assert read({"LIGER_STAGING_WORKERS": "3"}).staging_workers == 3


def test_outside_a_checkout_a_relative_folder_is_the_users(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(settings, "IN_CHECKOUT", False)
    monkeypatch.chdir(tmp_path)
    assert read({"WAREHOUSE_DIR": "w"}).warehouse_dir == tmp_path / "w"


def test_the_readme_documents_every_setting():
    source = Path(settings.__file__).read_text()
    names = set(re.findall(r'(?:text|count)\("([A-Z_]+)"', source))
    assert len(names) == len(dataclasses.fields(settings.Settings))
    table = (PROJECT_ROOT / "README.md").read_text().split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    assert names <= set(re.findall(r"^\| `([A-Z_]+)` \|", table, re.MULTILINE))
