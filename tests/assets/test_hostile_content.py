"""Hostile content from upstream: a field of megabytes (kernel, GPU, label, config, commit subject)
and GPU names that slug alike must not break the report or the exports, nor swell what Dagster stores."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from conftest import build_warehouse, git, liger_csv, liger_row
from report_reading import site_pages
from test_materialize import load_defs

from pipelines.core import display, metadata, settings
from pipelines.exports import bmf
from pipelines.exports.report import build_report, html, sweeps
from pipelines.orchestration.materialize import ingest
from pipelines.statistics import database_build

DATA = "benchmark/data/all_benchmark_data.csv"
# Big enough that a page or picture named after it cannot be a file, and that a copy of it in the
# report or in Dagster's metadata would show; small enough for a quick test.
BIG = 2_000_000
METADATA_MAX_BYTES = 200_000
REPORT_FILE_MAX_BYTES = 1_000_000


def hostile_rows(size: int = BIG) -> list[str]:
    """A kernel name, a GPU name, an x label and a config value each of `size` characters,
    each for two providers so the scorecard and the charts draw them."""
    kernel = "k" * size
    gpu = "NVIDIA " + "G" * size
    label = "very long label " * (size // 16)
    config = json.dumps({"M": 2048, "note": label})
    rows = []
    for provider, y in (("liger", "0.5"), ("huggingface", "0.9")):
        rows.append(liger_row(kernel=kernel, provider=provider, y50=y, y20=y, y80=y))
        rows.append(liger_row(gpu=gpu, provider=provider, y50=y, y20=y, y80=y))
        rows.append(liger_row(x_label=label, config=config, x_value="2048", provider=provider, y50=y, y20=y, y80=y))
        rows.append(liger_row(provider=provider, y50=y, y20=y, y80=y))
    return rows


def commit_with_subject(repo, files: dict[str, str], subject: str) -> None:
    """A commit whose message is `subject`, which may be longer than one command-line argument may be."""
    for name, text in files.items():
        (repo.path / name).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / name).write_text(text)
        git(repo.path, "add", name)
    message = repo.path.parent / "message.txt"
    message.write_text(subject)
    git(repo.path, "commit", "--quiet", "-F", str(message), date="2025-01-01T00:00:00+00:00")


# --- the report ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_huge_field_makes_a_report_of_short_file_names_and_bounded_files(upstream_repo, tmp_path):
    upstream_repo.commit({DATA: liger_csv(*hostile_rows())}, "hostile")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    summary = build_report(warehouse)
    assert len(summary.kernel_pages) == 2 and len(summary.gpus) == 2
    for path in summary.folder.rglob("*"):
        assert len(path.name.encode()) <= 255, path.name[:80]
        if path.suffix in (".html", ".svg"):
            assert path.stat().st_size < REPORT_FILE_MAX_BYTES, path.relative_to(summary.folder)
    site = site_pages(summary.folder)
    for page in site.values():
        for reference in page.links + page.sources + [image["src"] for image in page.images]:
            target, fragment = page.resolve(reference)
            assert target.is_file() and (not fragment or fragment in site[target].ids)


def test_names_are_short_distinct_and_stable():
    keys = ["a" * 300, "a" * 300 + "b", "NVIDIA B200", "NVIDIA-B200", "nvidia b200", "rms_norm", "", "é"]
    names = display.file_names(keys, keep_underscore=True)
    assert len(set(names.values())) == len(keys)
    assert all(0 < len(name.encode()) <= display.NAME_MAX_BYTES for name in names.values())
    assert names["rms_norm"] == "rms_norm"
    assert names == display.file_names(list(reversed(keys)), keep_underscore=True)
    # A name that does not clash keeps its plain slug, whatever else is in the set.
    assert display.file_names(["NVIDIA B200", "NVIDIA H100"]) == {"NVIDIA B200": "nvidia-b200", "NVIDIA H100": "nvidia-h100"}
    # html.Names is the same rule.
    assert html.Names(keys)["a" * 300] == names["a" * 300]


def test_display_text_is_cut_with_an_ellipsis():
    assert display.shorten("short", 10) == "short"
    cut = display.shorten("x" * 100, 10)
    assert len(cut) == 10 and cut.endswith("…")
    assert sweeps.wrap("word " * 1_000_000).count("\n") < 10
    assert len(html.text("y" * 1_000_000)) <= display.TEXT_MAX


def test_metadata_json_and_markdown_are_bounded():
    value = {"examples": ["z" * 1_000_000] * 1000, "nested": {"deep": ("q" * 1_000_000,)}}
    assert len(json.dumps(metadata.bounded_json(value))) < METADATA_MAX_BYTES
    table = metadata.markdown_table(["a", "b"], [("x" * 1_000_000, 1)] * 1000)
    assert len(table) < METADATA_MAX_BYTES


# --- Dagster's metadata --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_huge_field_keeps_every_stored_dagster_event_small(upstream_repo, tmp_path, monkeypatch):
    commit_with_subject(upstream_repo, {DATA: liger_csv(*hostile_rows())}, "s" * BIG)
    definitions = load_defs(monkeypatch, tmp_path / "warehouse", upstream_repo.path, tmp_path / "cache")
    instance = dg.DagsterInstance.ephemeral()
    result = ingest(definitions, instance, raise_on_error=False)
    assert result.success
    sizes = {}
    for entry in instance.all_logs(result.run_id):
        event = entry.dagster_event
        what = f"{event.event_type_value} {event.asset_key.to_user_string() if event.asset_key else ''}" if event else "log"
        sizes[what] = max(sizes.get(what, 0), len(dg.serialize_value(entry)))
    # The subject and the values reach the snapshot partition's materialization and the checks, bounded.
    assert "ASSET_MATERIALIZATION raw_snapshots" in sizes and any("CHECK_EVALUATION" in what for what in sizes)
    too_big = {what: size for what, size in sizes.items() if size >= METADATA_MAX_BYTES}
    assert not too_big


# --- BMF file names ------------------------------------------------------------------------------


def test_gpus_that_slug_alike_get_distinct_bmf_files(upstream_repo, tmp_path):
    gpus = ["NVIDIA B200", "NVIDIA-B200", "NVIDIA H100", "NVIDIA " + "G" * 1000]
    rows = [liger_row(gpu=gpu, y50=str(i + 1), y20=str(i + 1), y80=str(i + 1)) for i, gpu in enumerate(gpus)]
    upstream_repo.commit({DATA: liger_csv(*rows)}, "gpus")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    out = tmp_path / "bmf"
    counts = bmf.write_bmf(warehouse, out)
    names = bmf.file_names(gpus)
    assert sorted(counts) == sorted(p.name for p in out.iterdir()) == sorted(names.values())
    assert len(set(names.values())) == len(gpus)
    assert names["NVIDIA H100"] == "nvidia-h100.json"
    b200 = display.short_hash("NVIDIA B200")
    assert names["NVIDIA B200"] == f"nvidia-b200-{b200}.json" and names["NVIDIA-B200"].startswith("nvidia-b200-")
    assert all(len(name.encode()) <= 255 for name in names.values())
    # Each file holds its own GPU's run: the medians differ (1 ms, 2 ms, ...).
    for i, gpu in enumerate(gpus):
        [measures] = json.loads((out / names[gpu]).read_text()).values()
        assert measures["latency"]["value"] == (i + 1) * 1_000_000
    assert bmf.write_bmf(warehouse, out) == counts  # the same names on every run


@pytest.mark.parametrize("gpus", [["NVIDIA B200", "NVIDIA-B200"], ["NVIDIA-B200", "NVIDIA B200"]])
def test_bmf_names_do_not_depend_on_order(gpus):
    assert bmf.file_names(gpus) == bmf.file_names(sorted(gpus))
