"""The report on a small repository written here: its pages, charts and changes, a failed build that
keeps the old report, the `report` command, the Dagster asset, and a warehouse of failed runs only."""

from __future__ import annotations

import base64
from pathlib import Path

import dagster as dg
import pytest
from conftest import build_warehouse, liger_csv, liger_row
from report_reading import TableReader, read_svg, site_pages, svg_texts

from pipelines.__main__ import main
from pipelines.core import layout, settings
from pipelines.defs.exports.report import report as report_asset
from pipelines.defs.resources import Warehouse
from pipelines.exports.report import build_report, changes_page
from pipelines.statistics import database_build
from pipelines.storage import store

DATA = "benchmark/data/all_benchmark_data.csv"


def small_rows(timestamp: str, liger_ms: dict[int, str]) -> list[str]:
    """liger against huggingface along a sweep of H, speed and memory; a model-config sweep; a failed kernel."""
    rows = []
    for h, liger in liger_ms.items():
        for provider, y in (("liger", liger), ("huggingface", "0.9")):
            for metric, unit in (("speed", "ms"), ("memory", "MB")):
                rows.append(
                    liger_row(
                        provider=provider,
                        metric=metric,
                        unit=unit,
                        x_value=str(h),
                        y50=y,
                        y20=str(float(y) * 0.99),
                        y80=str(float(y) * 1.01),
                        timestamp=timestamp,
                    )
                )
    for model in ("llama_3_8b", "qwen2.5_7b"):
        for provider, y in (("liger", "1.0"), ("torch", "2.0")):
            rows.append(
                liger_row(
                    kernel="cross_entropy",
                    provider=provider,
                    x_name="model_config",
                    x_label="model",
                    x_value=model,
                    y50=y,
                    y20=y,
                    y80=y,
                    config='{"B": 1}',
                    timestamp=timestamp,
                )
            )
    rows.append(liger_row(kernel="geglu", y50="", y20="", y80="", timestamp=timestamp))
    return rows


@pytest.fixture
def small_warehouse(upstream_repo, tmp_path) -> Path:
    first = small_rows("2025-01-01 10:00:00", {1024: "0.5", 2048: "0.6", 4096: "0.7"})
    upstream_repo.commit({DATA: liger_csv(*first)}, "one")
    # A newer run of every key: liger slower at 1024 (a regression), faster at 4096 (an improvement).
    second = small_rows("2025-02-01 10:00:00", {1024: "0.8", 2048: "0.6", 4096: "0.4"})
    upstream_repo.commit({DATA: liger_csv(*second)}, "two")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    return warehouse


def published_manifest(warehouse: Path) -> str:
    """The published report build's manifest: a report kept as it was keeps it byte for byte."""
    return (layout.Layout(warehouse).builds(layout.REPORT_STAGE) / layout.CURRENT / layout.MANIFEST).read_text()


def test_small_report_pages_charts_and_changes(small_warehouse):
    summary = build_report(small_warehouse)
    assert sorted(summary.kernel_pages) == ["cross_entropy", "geglu", "rms_norm"]
    assert summary.pages == 3 + 2
    site = site_pages(summary.folder)
    geglu = site[(summary.folder / summary.kernel_pages["geglu"]).resolve()]
    assert "No passed run on this GPU" in geglu.text and not geglu.images
    rms = site[(summary.folder / summary.kernel_pages["rms_norm"]).resolve()]
    assert len(rms.images) == 2  # forward latency and forward peak memory on the one GPU
    changes = (summary.folder / "changes.html").read_text()
    # The warehouse has change_points, none of them here (no series is long enough): the page says 0, and
    # lists no version_changes instead.
    page_text = site[(summary.folder / "changes.html").resolve()].text
    assert changes_page.ABSENT not in page_text and "0 change points at 0 commits" in page_text
    assert TableReader(changes).tables == []
    for page in site.values():
        for reference in page.links + page.sources + [image["src"] for image in page.images]:
            target, fragment = page.resolve(reference)
            assert target.is_file() and (not fragment or fragment in site[target].ids)


def test_a_failed_build_keeps_the_old_report_and_leaves_nothing_behind(small_warehouse, monkeypatch):
    first = build_report(small_warehouse)
    before = first.index.read_text()

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(changes_page, "changes_page", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        build_report(small_warehouse)
    assert first.index.read_text() == before
    assert [p.name for p in small_warehouse.iterdir() if store.TMP_MARK in p.name] == []
    monkeypatch.undo()
    build_report(small_warehouse)
    assert first.index.read_text().count("<h2") == before.count("<h2")
    assert [p.name for p in small_warehouse.iterdir() if store.TMP_MARK in p.name] == []


def test_report_command_builds_when_needed_and_prints_the_path(small_warehouse, monkeypatch, capsys):
    monkeypatch.setenv("WAREHOUSE_DIR", str(small_warehouse))
    opened = []

    class Browser:
        def open(self, url):
            opened.append(url)
            return True

    monkeypatch.setattr("webbrowser.get", lambda *args: Browser())
    index = layout.Layout(small_warehouse).report / "index.html"
    assert main(["report", "--open"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(index) and "built" in err
    assert opened == [index.as_uri()]
    stamp = published_manifest(small_warehouse)

    assert main(["report"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(index) and "built" not in err
    assert published_manifest(small_warehouse) == stamp

    database_build.build_database(small_warehouse, settings.DEFAULT_BASELINES)  # newer statistics
    assert main(["report"]) == 0
    assert "built" in capsys.readouterr().err


def test_report_command_without_a_database_says_what_to_do(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WAREHOUSE_DIR", str(tmp_path / "empty"))
    assert main(["report"]) == 1
    assert "materialize" in capsys.readouterr().err


def test_report_asset_shows_the_overview_and_the_site(small_warehouse, tmp_path):
    resource = Warehouse(
        warehouse_dir=str(small_warehouse),
        source="unused",
        branch="main",
        file_glob=settings.DEFAULT_FILE_GLOB,
        cache_dir=str(tmp_path / "cache"),
        baselines=list(settings.DEFAULT_BASELINES),
    )
    result = dg.materialize([report_asset], resources={"warehouse": resource}, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    [event] = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    markdown = metadata["overview"].value
    encoded = markdown.split("data:image/svg+xml;base64,", 1)[1].rstrip(")")
    overview = read_svg(base64.b64decode(encoded))
    assert {"liger · triton", "NVIDIA A100-SXM4-80GB", "latency"} <= set(svg_texts(overview))
    index = Path(metadata["index"].value)
    assert index == layout.Layout(small_warehouse).report / "index.html" and index.is_file()
    assert metadata["url"].value == index.as_uri()
    assert metadata["kernel_pages"].value == 3 and metadata["pages"].value == 5
    assert metadata["rebuilt"].value is True
    stamp = published_manifest(small_warehouse)

    again = dg.materialize([report_asset], resources={"warehouse": resource}, instance=dg.DagsterInstance.ephemeral())
    [event] = again.get_asset_materialization_events()
    assert event.materialization.metadata["rebuilt"].value is False
    assert event.materialization.metadata["pages"].value == 5
    assert published_manifest(small_warehouse) == stamp


def test_a_warehouse_of_failed_runs_still_makes_a_report(upstream_repo, tmp_path):
    failed = [liger_row(y50="", y20="", y80=""), liger_row(provider="huggingface", y50="")]
    upstream_repo.commit({DATA: liger_csv(*failed)}, "failed")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    summary = build_report(warehouse)
    site = site_pages(summary.folder)
    index = site[summary.index.resolve()]
    assert "No provider has a baseline to compare with on this GPU" in index.text
    assert "NVIDIA A100-SXM4-80GB" in index.text
    for page in site.values():
        for image in page.images:
            assert page.resolve(image["src"])[0].is_file()
