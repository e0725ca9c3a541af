"""The static report of the real data, checked page by page and link by link: a page per kernel, the
overview's GPUs and scorecard, every link and anchor, every number's run, the changes page, and when
the report is stale."""

from __future__ import annotations

import os
import re

from report_reading import TITLE, TableReader, column

from pipelines.exports.report import changes_page, html, is_stale, pages
from pipelines.exports.report import report_build as build
from pipelines.statistics import db

pytest_plugins = ["report_reading"]


def test_every_kernel_has_a_page(real_report, real_pages, real_warehouse):
    kernels = column(real_warehouse, "SELECT DISTINCT kernel FROM runs ORDER BY 1")
    assert len(kernels) == 38
    assert sorted(real_report.kernel_pages) == kernels
    for kernel, relative in real_report.kernel_pages.items():
        page = real_pages[(real_report.folder / relative).resolve()]
        assert kernel in page.h1
        assert page.title.endswith(TITLE)
    index = real_pages[real_report.index.resolve()]
    linked = {index.resolve(href)[0] for href in index.links}
    assert {(real_report.folder / p).resolve() for p in real_report.kernel_pages.values()} <= linked


def test_the_overview_names_every_gpu_with_its_scorecard(real_report, real_pages, real_warehouse):
    gpus = column(real_warehouse, "SELECT DISTINCT gpu_name FROM runs ORDER BY 1")
    assert len(gpus) == 8
    index = real_pages[real_report.index.resolve()]
    assert index.title == TITLE
    for gpu in gpus:
        assert gpu in index.text
        assert pages.gpu_anchor(gpu) in index.ids
    scorecard_images = [image for image in index.images if "/scorecard/" in image["src"]]
    pairs = column(real_warehouse, "SELECT count(*) FROM (SELECT DISTINCT gpu_name, metric FROM kernel_scorecard)")
    assert len(scorecard_images) == pairs[0]


def test_overview_wins_and_losses_add_up_to_the_scorecard(real_report, real_warehouse):
    sql = "SELECT sum(wins), sum(losses), sum(draws) FROM kernel_scorecard"
    expected = db.query(real_warehouse, sql).rows[0]
    text = real_report.index.read_text(encoding="utf-8")
    tables = TableReader(text).tables
    totals = [t for t in tables if t[0][:3] == ["provider", "baseline", "rows"]]
    assert totals
    sums = [sum(int(row[i]) for t in totals for row in t[1:]) for i in (4, 5, 6)]
    assert tuple(sums) == tuple(expected)


def test_every_link_resolves(real_pages, real_report):
    checked = 0
    for page in real_pages.values():
        for reference in page.links + page.sources + [image["src"] for image in page.images]:
            target, fragment = page.resolve(reference)
            assert target.is_file(), f"{page.path.name}: {reference} does not exist"
            assert real_report.folder.resolve() in target.parents
            if fragment:
                assert fragment in real_pages[target].ids, f"{page.path.name}: no #{fragment} in {target.name}"
            checked += 1
    assert checked > 4500  # every point links its run; the changes page has none without change_points


def test_every_number_carries_its_run_snapshot_and_commit(real_report, real_pages, real_warehouse):
    runs = db.query(
        real_warehouse,
        """SELECT runs.kernel, runs.run_id, runs.first_seen_snapshot, snapshots."commit"
           FROM runs JOIN snapshots ON snapshots.snapshot_id = runs.first_seen_snapshot""",
    ).rows
    assert len(runs) == 4421
    for kernel, run_id, snapshot, commit in runs:
        page = real_pages[(real_report.folder / real_report.kernel_pages[kernel]).resolve()]
        assert html.anchor_id("run", run_id) in page.ids
        assert run_id in page.text and snapshot in page.text and commit[:12] in page.text
    # Each charted point links to its run.
    point = db.query(real_warehouse, "SELECT kernel, run_id FROM provider_comparisons LIMIT 1").rows[0]
    page = real_pages[(real_report.folder / real_report.kernel_pages[point[0]]).resolve()]
    assert f"#{html.anchor_id('run', point[1])}" in page.links


def test_without_change_points_the_changes_page_says_so_and_lists_no_version_changes(real_report, real_pages):
    # The data stream alone has no series long enough for a change point: the table is there, empty
    # (test_report_history builds one that has some).
    path = (real_report.folder / "changes.html").resolve()
    assert changes_page.ABSENT not in real_pages[path].text and "0 change points at 0 commits" in real_pages[path].text
    assert TableReader(path.read_text(encoding="utf-8")).tables == []
    assert not [href for href in real_pages[path].links if "#run-" in href]


def test_ratios_name_their_baseline_and_stale_kernels_their_date(real_report, real_pages, real_warehouse):
    index = real_report.index.read_text(encoding="utf-8")
    totals = [t for t in TableReader(index).tables if t[0][:2] == ["provider", "baseline"]]
    assert totals and all(re.fullmatch(r"(huggingface|torch) · [a-z+]+", row[1]) for t in totals for row in t[1:])
    [kernels] = [t for t in TableReader(index).tables if t[0][:2] == ["kernel", "name"]]
    newest = {row[1]: row[4] for row in kernels[1:]}
    # rms_norm's newest run of upstream's data files is from 2024: stale, and dated.
    assert newest["rms_norm"].startswith("upstream files: 2024-") and newest["rms_norm"].endswith("stale")
    page = real_pages[(real_report.folder / real_report.kernel_pages["rms_norm"]).resolve()]
    assert "upstream files: newest run 2024-" in page.text and "stale:" in page.text


def test_the_report_is_fresh_until_the_database_or_its_code_changes(real_report, real_warehouse, monkeypatch):
    assert not is_stale(real_warehouse)
    with monkeypatch.context() as patched:
        patched.setattr(build, "report_code_version", lambda: "other code")
        assert is_stale(real_warehouse)
    assert not is_stale(real_warehouse)
    database = db.database_path(real_warehouse)
    stat = database.stat()
    os.utime(database, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    try:
        assert is_stale(real_warehouse)
    finally:
        os.utime(database, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not is_stale(real_warehouse)
