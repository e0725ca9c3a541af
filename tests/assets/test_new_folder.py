"""One new CI folder (issue 29): a warehouse built with gh-pages' newest folder held back, then materialized again once
the branch has it, is the warehouse a clean build of the whole history makes, table for table, statistic for
statistic, export file for export file and report page for page, though the second run keeps what it can of the first."""

from __future__ import annotations

import datetime as dt
import math
import random
import re
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest
from conftest import git, liger_csv, liger_row
from test_materialize import DATA, load_defs, materialize_everything

from pipelines.assemble.tables_build import TABLE_NAMES
from pipelines.statistics import db

pytestmark = pytest.mark.slow

PROVIDERS = (("liger", 0.5), ("huggingface", 0.9), ("torch", 0.8))
# The report's footer says when it was built: the one line two builds of the same data do not share.
BUILT_AT = re.compile(rb"Built [^<]*? UTC")
START = dt.datetime(2025, 1, 6, tzinfo=dt.UTC)
WEEKS = 14


def week(number: int, gpu: str = "NVIDIA H100 80GB HBM3") -> str:
    """One CI folder's benchmark.csv: every kernel of the week again, within 1% of its level, liger's rms_norm 30%
    slower from week 8 on."""
    rng = random.Random(number)
    rows = []
    for kernel in ("rms_norm", "geglu"):
        for provider, value in PROVIDERS:
            for x in ("1024", "2048", "4096"):
                step = 1.3 if (kernel, provider) == ("rms_norm", "liger") and number >= 8 else 1.0
                y = value * step * int(x) / 1024 * math.exp(rng.gauss(0, 0.01))
                rows.append(
                    liger_row(
                        kernel=kernel,
                        provider=provider,
                        x_value=x,
                        y50=f"{y:.4f}",
                        y20=f"{y * 0.98:.4f}",
                        y80=f"{y * 1.02:.4f}",
                        gpu=gpu,
                        timestamp=(START + dt.timedelta(days=7 * number)).strftime("%Y-%m-%d 01:00:00"),
                        version=f"0.5.{number}",
                    )
                )
    return liger_csv(*rows)


def upstream(repo) -> str:
    """main with two versions of its data file, gh-pages with WEEKS weekly CI folders; returns the commit before the last."""
    repo.commit({DATA: week(0, gpu="NVIDIA A100-SXM4-80GB")}, "data one", date="2024-12-20T00:00:00+00:00")
    repo.commit({DATA: week(1, gpu="NVIDIA A100-SXM4-80GB")}, "data two", date="2024-12-27T00:00:00+00:00")
    git(repo.path, "switch", "--quiet", "--orphan", "gh-pages")
    commits = [
        repo.commit(
            {f"benchmarks/c{n:06d}/benchmark.csv": week(n)},
            f"Add benchmark for commit c{n:06d}",
            date=(START + dt.timedelta(days=7 * n, hours=2)).isoformat(),
        )
        for n in range(WEEKS)
    ]
    git(repo.path, "switch", "--quiet", "main")
    return commits[-2]


def tables(warehouse: Path) -> dict[str, pl.DataFrame]:
    return {name: pl.read_parquet(warehouse / f"{name}.parquet") for name in TABLE_NAMES}


def statistics(warehouse: Path) -> dict[str, pl.DataFrame]:
    # A statistic's rows are a set: its table's order is whatever the build's plan made.
    with duckdb.connect(str(warehouse / "warehouse.duckdb"), read_only=True) as con:
        return {name: con.sql(f'SELECT * FROM "{name}" ORDER BY ALL').pl() for name in db.STATISTICS}


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (links followed) by its path, the report's build time left out."""
    return {
        str(path.relative_to(folder)): BUILT_AT.sub(b"Built UTC", path.read_bytes()) for path in sorted(folder.rglob("*")) if path.is_file()
    }


def test_a_new_ci_folder_gives_the_warehouse_a_clean_build_gives(upstream_repo, tmp_path, monkeypatch):
    held = upstream(upstream_repo)
    head = git(upstream_repo.path, "rev-parse", "gh-pages")

    git(upstream_repo.path, "update-ref", "refs/heads/gh-pages", held)
    added = tmp_path / "added"
    definitions = load_defs(monkeypatch, added / "warehouse", upstream_repo.path, added / "cache")
    with dg.DagsterInstance.ephemeral() as instance:
        assert materialize_everything(definitions, instance).success
        before = pl.read_parquet(added / "warehouse" / "snapshots.parquet").height
        git(upstream_repo.path, "update-ref", "refs/heads/gh-pages", head)
        assert materialize_everything(definitions, instance).success
    assert pl.read_parquet(added / "warehouse" / "snapshots.parquet").height == before + 1

    clean = tmp_path / "clean"
    definitions = load_defs(monkeypatch, clean / "warehouse", upstream_repo.path, clean / "cache")
    with dg.DagsterInstance.ephemeral() as instance:
        assert materialize_everything(definitions, instance).success

    warehouse, whole = added / "warehouse", clean / "warehouse"
    for name, table in tables(whole).items():
        assert tables(warehouse)[name].equals(table), name
    assert statistics(whole)["change_points"].height > 0, "the history should hold a step for the series to find"
    for name, table in statistics(whole).items():
        assert statistics(warehouse)[name].equals(table), name
    for folder in ("exports", "report"):
        kept, made = files(warehouse / folder), files(whole / folder)
        assert kept.keys() == made.keys(), folder
        for path, data in made.items():
            assert kept[path] == data, f"{folder}/{path}"
