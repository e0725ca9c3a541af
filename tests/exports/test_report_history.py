"""The report's answer to "did it get worse?", on a small two-stream repository written here: the changes
page lists the change points by commit (newest first, regressions first) naming size, cause and baseline;
a kernel's page draws its series over the benchmarked commits with its change points marked; a kernel
whose newest data is old says so; the cuTile and Triton variants of liger are told apart; and a warehouse
without the change_points table still makes a report, with a note."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
from conftest import git, liger_csv, liger_row
from report_reading import SVG, Page, TableReader, read_svg, site_pages, svg_texts

from pipelines.assemble.tables_build import build_tables
from pipelines.core import settings
from pipelines.core.settings import for_source
from pipelines.exports.report import build_report, changes_page, history_site, html, implementations
from pipelines.exports.report import history_charts as history
from pipelines.exports.report.style import BASELINE, GRID, INK
from pipelines.exports.report.timeline import IMPROVED, REGRESSED
from pipelines.ingest.steps import stage_new, sync
from pipelines.statistics import database_build, db
from pipelines.storage import store

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"
H100 = "NVIDIA H100 80GB HBM3"
# The CI folders, oldest first: (folder, run timestamp, liger's latency at H=1024 and at H=2048, huggingface's).
FOLDERS = [
    ("aaaaaaa", "2025-05-01 00:10:00", "0.50", "0.90", "1.00"),
    ("bbbbbbb", "2025-05-08 00:10:00", "0.50", "0.90", "1.00"),
    ("ccccccc", "2025-05-15 00:10:00", "0.40", "0.45", "0.50"),  # everything faster: a new host
    ("ddddddd-v0.6.0", "2025-05-22 00:10:00", "0.50", "0.45", "0.50"),  # liger at 1024 slower: code
    ("eeeeeee", "2025-05-29 00:10:00", "0.50", "0.45", "0.50"),
]


def _ci_rows(timestamp: str, liger_1024: str, liger_2048: str, huggingface: str) -> list[str]:
    rows = []
    for h, liger in (("1024", liger_1024), ("2048", liger_2048)):
        for provider, y in (("liger", liger), ("huggingface", huggingface)):
            rows.append(liger_row(provider=provider, x_value=h, y50=y, y20=y, y80=y, gpu=H100, timestamp=timestamp))
    return rows


def _data_rows() -> tuple[list[str], list[str]]:
    """rms_norm on an A100 in 2024 only (stale); swiglu in 2025 in the Triton file and in the cuTile file."""
    old = [liger_row(provider=p, y50="0.5", timestamp="2024-09-03 15:31:39") for p in ("liger", "huggingface")]
    recent = "2025-06-01 10:00:00"
    triton = [liger_row(kernel="swiglu", provider=p, gpu="NVIDIA B200", timestamp=recent) for p in ("liger", "huggingface")]
    cutile = [
        liger_row(kernel="swiglu", provider=p, gpu="NVIDIA B200", y50=y, timestamp="2025-06-01 09:00:00")
        for p, y in (("liger", "0.3"), ("liger_cutile", "0.25"), ("liger_triton", "0.45"), ("huggingface", "0.6"))
    ]
    return old + triton, cutile


@pytest.fixture
def two_streams(upstream_repo, tmp_path) -> Path:
    """main: the data files; gh-pages: one folder per benchmarked commit. Tables and warehouse.duckdb built."""
    data, cutile = _data_rows()
    upstream_repo.commit({DATA: liger_csv(*data), CUTILE: liger_csv(*cutile)}, "data")
    git(upstream_repo.path, "checkout", "--quiet", "--orphan", "gh-pages")
    git(upstream_repo.path, "rm", "-r", "-f", "--quiet", ".")
    for folder, timestamp, *values in FOLDERS:
        upstream_repo.commit({f"benchmarks/{folder}/benchmark.csv": liger_csv(*_ci_rows(timestamp, *values))}, f"ci {folder}")
    git(upstream_repo.path, "checkout", "--quiet", "main")
    warehouse = tmp_path / "warehouse"
    source = for_source(str(upstream_repo.path), "main", settings.DEFAULT_FILE_GLOB, tmp_path / "cache", streams=("data", "ci"))
    with store.writer_lock(warehouse):
        listing = sync(warehouse, source)
        stage_new(warehouse, source, listing)
        build_tables(warehouse, listing)
    database_build.build_database(warehouse, settings.DEFAULT_BASELINES)
    return warehouse


def _run(warehouse: Path, provider: str, h: str, folder: str) -> str:
    commit, _, release = folder.partition("-v")
    [(run_id,)] = db.query(
        warehouse,
        f"""SELECT run_id FROM runs WHERE provider = '{provider}' AND x_value = '{h}' AND benchmarked_commit = '{commit}'
            AND release IS NOT DISTINCT FROM {f"'{release}'" if release else "NULL"}""",
    ).rows
    return run_id


def _add_change_points(warehouse: Path) -> None:
    """The change points series would find in FOLDERS: at ccccccc every series faster (host for liger, whose
    baseline huggingface moved alike), at ddddddd liger at H=1024 25% slower (code)."""
    columns = (
        "group_id, provider, backend, kernel, pass, metric, gpu_name, workload_slug, before_run_id, after_run_id, "
        "before_commit, after_commit, before_value, after_value, ratio, verdict, cause, confidence, observed_at, status, "
        "below_min_effect"
    )
    points = [
        ("liger", "1024", "bbbbbbb", "ccccccc", 0.5e6, 0.4e6, "improved", "host"),
        ("liger", "2048", "bbbbbbb", "ccccccc", 0.9e6, 0.45e6, "improved", "host"),
        ("huggingface", "2048", "bbbbbbb", "ccccccc", 1.0e6, 0.5e6, "improved", "code"),
        ("liger", "1024", "ccccccc", "ddddddd-v0.6.0", 0.4e6, 0.5e6, "regressed", "code"),
    ]
    runs = [(_run(warehouse, p[0], p[1], p[2]), _run(warehouse, p[0], p[1], p[3])) for p in points]
    with duckdb.connect(str(db.database_path(warehouse))) as con:
        # The build's own change_points has none here (five points are too few for a series' own noise): replaced.
        con.execute("DROP TABLE IF EXISTS change_points")
        con.execute(
            "CREATE TABLE change_points (group_id TEXT, provider TEXT, backend TEXT, kernel TEXT, pass TEXT, metric TEXT, "
            "gpu_name TEXT, workload_slug TEXT, before_run_id TEXT, after_run_id TEXT, before_commit TEXT, after_commit TEXT, "
            "before_value DOUBLE, after_value DOUBLE, ratio DOUBLE, verdict TEXT, cause TEXT, confidence DOUBLE, "
            "observed_at TIMESTAMPTZ, status TEXT, below_min_effect BOOLEAN)"
        )
        for (_, _, _, _, before_value, after_value, verdict, cause), (before_run, after_run) in zip(points, runs, strict=True):
            con.execute(
                f"""INSERT INTO change_points ({columns})
                    SELECT a.group_id, a.provider, a.backend, a.kernel, a.pass, a.metric, a.gpu_name, a.workload_slug, ?, ?,
                           b.benchmarked_commit, a.benchmarked_commit, ?, ?, ?, ?, ?, 0.9, a.observed_at, 'confirmed', false
                    FROM runs AS a, runs AS b WHERE a.run_id = ? AND b.run_id = ?""",
                [before_run, after_run, before_value, after_value, before_value / after_value, verdict, cause, after_run, before_run],
            )


@pytest.fixture
def with_change_points(two_streams) -> Path:
    _add_change_points(two_streams)
    return two_streams


def _column(table: list[list[str]], header: str) -> list[str]:
    index = table[0].index(header)
    return [row[index] for row in table[1:]]


def test_the_changes_page_lists_change_points_newest_first_regressions_first_with_cause_and_baseline(with_change_points):
    summary = build_report(with_change_points)
    assert "1 regression and 3 improvements found as change points" in Page(summary.index).text
    text = (summary.folder / "changes.html").read_text(encoding="utf-8")
    page = Page(summary.folder / "changes.html")
    assert "previous run" not in text and changes_page.ABSENT not in page.text  # the old version_changes list is gone
    overview, newest, older = TableReader(text).tables
    # The summary: one row per commit, newest first; then a section per commit in that order.
    assert _column(overview, "commit") == ["ddddddd-v0.6.0", "ccccccc"]
    assert _column(overview, "regressions (code)") == ["1", "0"] and _column(overview, "improvements") == ["0", "3"]
    headings = re.findall(r"<h2>([^<]*)</h2>", text)
    assert [h.split(" · ")[0] for h in headings] == ["ddddddd-v0.6.0", "ccccccc"]
    [regression] = newest[1:]
    header = newest[0]
    assert regression[header.index("verdict")] == "regressed"
    assert regression[header.index("ratio (before / after)")] == "0.8x (25% slower)"
    assert regression[header.index("cause")] == "code"
    assert regression[header.index("baseline")] == "huggingface · triton"
    assert regression[header.index("implementation")] == "liger · triton"
    assert regression[header.index("commits")] == "ccccccc → ddddddd-v0.6.0"
    # At ccccccc: improvements only, the largest first; liger's two are the host's doing.
    assert _column(older, "ratio (before / after)") == ["2x (50% faster)", "2x (50% faster)", "1.25x (20% faster)"]
    assert sorted(_column(older, "cause")) == ["code", "host", "host"]
    # Every run link resolves to the run's row on its kernel's page.
    site = site_pages(summary.folder)
    run_links = [href for href in page.links if "#run-" in href]
    assert len(run_links) == 2 * 4
    for href in page.links:  # the runs' rows, the kernels' change points, the commits' sections
        target, fragment = page.resolve(href)
        assert target.is_file() and (not fragment or fragment in site[target].ids)
    assert f"{summary.kernel_pages['rms_norm']}#change-points" in page.links


def test_regressions_come_first_within_a_commit():
    row = {"after_commit": "c", "after_release": None, "after_benchmarked_commit": "c", "kernel": "k", "gpu_name": "g"}
    row |= {"pass": "full", "metric": "speed", "workload_slug": "w", "observed_at": None}
    rows = [row | {"verdict": v, "ratio": r, "workload_slug": w} for v, r, w in (("improved", 1.5, "a"), ("regressed", 0.9, "b"))]
    rows.append(row | {"verdict": "regressed", "ratio": 0.5, "workload_slug": "c"})
    import polars as pl

    [commit] = changes_page.by_commit(pl.DataFrame(rows))
    assert [(r["verdict"], r["ratio"]) for r in commit.rows] == [("regressed", 0.5), ("regressed", 0.9), ("improved", 1.5)]


def test_a_kernel_page_draws_its_series_over_the_commits_and_marks_its_change_points(with_change_points):
    summary = build_report(with_change_points)
    page_path = summary.folder / summary.kernel_pages["rms_norm"]
    page = Page(page_path)
    [drawn] = [image for image in page.images if "/history-" in image["src"]]
    root = read_svg(page.resolve(drawn["src"])[0].read_bytes())
    texts = svg_texts(root)
    # The commits along x, oldest first, under each of the two workloads' panels; liger and huggingface in each.
    labels = [t for t in texts if t in {f for f, *_ in FOLDERS}]
    assert labels == [f for f, *_ in FOLDERS] * 2
    labels = labels[: len(FOLDERS)]
    assert {"liger · triton", "huggingface · triton", "0.80x", "2.00x", "1.25x"} <= set(texts)
    lines = [p for p in root.iter(f"{SVG}path") if p.get("stroke") in (REGRESSED, IMPROVED) and "V" not in p.get("d")]
    marks = [p for p in lines if p.get("stroke-linecap") != "round"]
    # One vertical line per change point: 1 regression (solid: code), 3 improvements (2 dashed: host).
    assert sorted((p.get("stroke"), bool(p.get("stroke-dasharray"))) for p in marks) == sorted(
        [(REGRESSED, False), (IMPROVED, True), (IMPROVED, True), (IMPROVED, False)]
    )
    # The regression's line sits between ccccccc and ddddddd, the improvements' between bbbbbbb and ccccccc.
    tick_x: dict[str, float] = {}
    for t in root.iter(f"{SVG}text"):
        if t.text in labels:
            tick_x.setdefault(t.text, float(t.get("x")) - 3)  # the first panel's; the label is drawn 3 px right of its tick
    [regression] = [float(re.match(r"M([-\d.]+)", p.get("d")).group(1)) for p in marks if p.get("stroke") == REGRESSED]
    # (its panel may be the second, one column to the right: the panels share the commits' positions)
    middle = (tick_x["ccccccc"] + tick_x["ddddddd-v0.6.0"]) / 2
    assert regression % history.COLUMN_WIDTH == pytest.approx(middle, abs=0.2)
    # The page lists the kernel's change points, newest commit first, each run linked to its row here.
    tables = TableReader(page_path.read_text(encoding="utf-8")).tables
    [changes] = [t for t in tables if t[0][:2] == ["verdict", "ratio (before / after)"]]
    assert _column(changes, "verdict") == ["regressed", "improved", "improved", "improved"]
    for href in [h for h in page.links if h.startswith("#run-")]:
        assert href[1:] in page.ids


def test_stale_kernels_are_flagged_with_the_date(two_streams):
    summary = build_report(two_streams)
    index = summary.index.read_text(encoding="utf-8")
    [kernels] = [t for t in TableReader(index).tables if t[0][:2] == ["kernel", "name"]]
    newest = dict(zip(_column(kernels, "name"), _column(kernels, "newest run"), strict=True))
    assert newest["rms_norm"] == "upstream files: 2024-09-03 staleupstream CI: 2025-05-29"
    assert newest["swiglu"] == "upstream files: 2025-06-01"
    rms = Page(summary.folder / summary.kernel_pages["rms_norm"])
    assert "upstream files: newest run 2024-09-03, stale: 270 days before that stream's newest run (2025-06-01)" in rms.text
    assert "stale:" not in Page(summary.folder / summary.kernel_pages["swiglu"]).text


def test_cutile_and_triton_liger_are_told_apart_and_grouped(two_streams):
    summary = build_report(two_streams)
    chart = summary.folder / "img" / "kernels" / "swiglu" / "nvidia-b200-forward-speed.svg"
    root = read_svg(chart.read_bytes())
    texts = svg_texts(root)
    variants = ["liger · triton", "liger · cutile", "liger_cutile · cutile", "liger_triton · cutile"]
    assert set(variants) <= set(texts)
    assert "liger:" in texts and "huggingface:" in texts  # the legend groups them under their family
    assert any(t.startswith("ratio = baseline / value, baseline: huggingface · ") for t in texts)
    styles = implementations.styles([*variants, "huggingface · triton"])
    assert len({s.color for s in styles.values()}) == 5 and len({s.dash for n, s in styles.items() if n in variants}) == 4
    # In the chart, the four variants of liger are four dash patterns (solid and three others) in four shades.
    drawn = [p for p in root.iter(f"{SVG}path") if p.get("stroke") not in (None, "none", GRID, INK, BASELINE)]
    assert {p.get("stroke-dasharray") for p in drawn} >= {None, "6 3", "2 2", "8 3 2 3"}
    assert len({p.get("stroke") for p in drawn}) == 6  # and huggingface, in both files, two more
    page = summary.folder / summary.kernel_pages["swiglu"]
    [runs] = [t for t in TableReader(page.read_text(encoding="utf-8")).tables if t[0][:2] == ["run", "GPU"]]
    assert set(variants) <= set(_column(runs, "implementation"))


def test_without_the_change_points_table_the_report_says_so(two_streams):
    # A warehouse.duckdb built before change points were computed.
    with duckdb.connect(str(db.database_path(two_streams))) as con:
        con.execute("DROP TABLE change_points")
    summary = build_report(two_streams)
    changes = Page(summary.folder / "changes.html")
    assert changes_page.ABSENT in changes.text
    rms = Page(summary.folder / summary.kernel_pages["rms_norm"])
    assert changes_page.ABSENT in rms.text
    assert "no change points computed yet" in Page(summary.index).text
    # The history is still drawn, with nothing marked.
    [drawn] = [image for image in rms.images if "/history-" in image["src"]]
    assert "0.80x" not in svg_texts(read_svg(rms.resolve(drawn["src"])[0].read_bytes()))
    assert len(FOLDERS) >= history_site.MIN_COMMITS


# --- the real bundle, both streams ---------------------------------------------------------------


@pytest.mark.slow
def test_the_real_two_stream_report_draws_the_ci_history_and_flags_rms_norm(upstream_warehouse):
    with store.writer_lock(upstream_warehouse):
        database_build.build_database(upstream_warehouse, settings.DEFAULT_BASELINES)
        summary = build_report(upstream_warehouse)
    site = site_pages(summary.folder)
    rms = site[(summary.folder / summary.kernel_pages["rms_norm"]).resolve()]
    # Upstream's data files last ran rms_norm in 2024; its CI ran it to the end of the CI history.
    assert "upstream files: newest run 2024-09-03, stale:" in rms.text
    assert re.search(r"upstream CI: newest run 2026-\d\d-\d\d[;.]", rms.text)
    histories = [image for image in rms.images if "/history-" in image["src"]]
    assert {"NVIDIA H100 80GB HBM3" in image["alt"] for image in histories} == {True, False}  # the H100 and the H200
    h100 = [image for image in histories if "H100 80GB" in image["alt"] and ", full · latency," in image["alt"]]
    [drawn] = h100
    texts = svg_texts(read_svg(rms.resolve(drawn["src"])[0].read_bytes()))
    assert {"liger · triton", "huggingface · triton", "ab7fe2a"} <= set(texts)
    # Light: one picture per kernel, GPU, pass and metric that CI benchmarked at 3 commits or more, not per workload.
    pictures = [p for p in summary.folder.rglob("history-*.svg")]
    [(expected,)] = db.query(
        upstream_warehouse,
        """SELECT count(*) FROM (SELECT kernel, gpu_name, pass, metric FROM runs
           WHERE benchmarked_commit IS NOT NULL AND status = 'passed' GROUP BY ALL
           HAVING count(DISTINCT (benchmarked_commit, release)) >= 3)""",
    ).rows
    assert len(pictures) == expected < 400
    _every_workload_is_drawn(summary, site, upstream_warehouse)
    changes = site[(summary.folder / "changes.html").resolve()]
    if changes_page.ABSENT in changes.text:
        return  # built before the change_points table: the page says so (test_without_the_change_points_table...)
    tables = TableReader((summary.folder / "changes.html").read_text(encoding="utf-8")).tables
    [overview] = [t for t in tables if "first run after" in t[0]]
    # What changed in the newest run: its open lines, then its folded ones (the same columns).
    newest = [tables[0][0]] + [row for t in tables if t[0] == tables[0][0] for row in t[1:]]
    firsts = _column(overview, "first run after")
    assert firsts == sorted(firsts, reverse=True)
    _the_newest_run_opens_the_pages_and_its_steps_are_drawn(summary, site, newest)


def _the_newest_run_opens_the_pages_and_its_steps_are_drawn(summary, site, newest: list[list[str]]) -> None:
    """Issue 28's cases on the real history: what the newest CI run (ab7fe2a) changed opens the changes page and
    the front page, liger first; tvd's step, found on a data-stream run, is drawn on the CI axis; its 1% steps are not."""
    changes_text = (summary.folder / "changes.html").read_text(encoding="utf-8")
    assert "What changed in the newest run: ab7fe2a" in changes_text
    assert changes_text.index('id="newest-run"') < changes_text.index('id="every"')
    index_text = summary.index.read_text(encoding="utf-8")
    assert "What changed in the newest run: ab7fe2a" in index_text and index_text.index('id="newest-run"') < index_text.index("<h2>Kernels")
    rows = {(r[0], r[2], r[3]): dict(zip(newest[0], r, strict=True)) for r in newest[1:]}
    implementations_in_order = _column(newest, "implementation")
    liger = [name.startswith("liger") for name in implementations_in_order]
    assert liger == sorted(liger, reverse=True), "liger's lines first"
    # softmax's liger backward: 8.8x slower at ab7fe2a than at e6f84b8 (e6f84b8's fast outlier, then back).
    softmax = rows[("softmax", "backward · speed", "liger · triton")]
    assert softmax["largest"].startswith("0.113x") and softmax["against"] == "e6f84b8"
    # tvd's liger forward: 1.7x faster than before the step of the newest runs (against 5057ca8, every workload).
    tvd = rows[("tvd", "forward · speed", "liger · triton")]
    assert tvd["moved"] == "6 of 6" and tvd["typical"].startswith("1.6") and tvd["against"] == "5057ca8"
    # That step was found at 8260f92, a data-stream commit: drawn at e6f84b8, the first benchmarked commit after it.
    page = site[(summary.folder / summary.kernel_pages["tvd"]).resolve()]
    [forward] = [i for i in page.images if "/history-" in i["src"] and "H100 80GB" in i["alt"] and "forward" in i["alt"]]
    root = read_svg(page.resolve(forward["src"])[0].read_bytes())
    labels = svg_texts(root)
    assert len([label for label in labels if re.fullmatch(r"1\.6\dx", label)]) == 4  # one per panel
    # tvd's 1% steps (a host flip, drawn in red on every panel before issue 28) are drawn on none of its charts.
    for image in [i for i in page.images if "/history-" in i["src"] and "H100 80GB" in i["alt"]]:
        drawn = svg_texts(read_svg(page.resolve(image["src"])[0].read_bytes()))
        assert not {label for label in drawn if re.fullmatch(r"0\.9[6-9]x\??|1\.0[0-4]x\??", label)}
    # layer_norm's huggingface steps of 3-4% at 1c07943 are change points below the minimum effect: listed apart, not drawn.
    layer_norm = site[(summary.folder / summary.kernel_pages["layer_norm"]).resolve()]
    assert "steps smaller than 5%, not counted as changes" in layer_norm.text
    [chart] = [i for i in layer_norm.images if "/history-" in i["src"] and "H100 80GB" in i["alt"] and "forward" in i["alt"]]
    drawn = svg_texts(read_svg(layer_norm.resolve(chart["src"])[0].read_bytes()))
    assert not {label for label in drawn if re.fullmatch(r"0\.9[6-9]x\??|1\.0[0-4]x\??", label)}
    # Every workload is reachable (issue 31): the two of six tvd workloads not in the chart are in the picture folded under it.
    [rest] = [i for i in page.images if "/workloads-" in i["src"] and "H100 80GB" in i["alt"] and "forward" in i["alt"]]
    shown = {t for t in labels if t.startswith("batch8-seq2048-vocab")}
    others = {t for t in svg_texts(read_svg(page.resolve(rest["src"])[0].read_bytes())) if t.startswith("batch8-seq2048-vocab")}
    assert len(shown) == 4 and len(others) == 2 and not shown & others
    assert "The other 2 workloads" in page.text


def _every_workload_is_drawn(summary, site, warehouse: Path) -> None:
    """Each workload of each history chart is a panel of the chart's picture or of the folded second picture
    under it (issue 31: 4 of N workloads per panel, the others out of reach)."""
    charts = db.query(
        warehouse,
        """SELECT kernel, gpu_name, pass, metric, list(DISTINCT workload_slug) FROM runs
           WHERE benchmarked_commit IS NOT NULL AND status = 'passed' GROUP BY ALL
           HAVING count(DISTINCT (benchmarked_commit, release)) >= 3""",
    ).rows
    folded = 0
    for kernel, gpu, pass_, metric, workloads in charts:
        page = site[(summary.folder / summary.kernel_pages[kernel]).resolve()]
        text = (summary.folder / summary.kernel_pages[kernel]).read_text(encoding="utf-8")
        anchor = html.anchor_id("history", "\0".join([gpu, pass_, metric]))
        figure = re.search(f'<figure id="{anchor}">(.*?)</figure>', text, re.S).group(1)
        sources = re.findall(r'src="([^"]+)"', figure)
        folded += len(sources) == 2
        # A panel's title is its workload, wrapped at 72 characters: the lines joined give it back.
        titles = "\n".join("".join(svg_texts(read_svg(page.resolve(src)[0].read_bytes()))) for src in sources)
        assert [w for w in workloads if w not in titles] == [], (kernel, gpu, pass_, metric)
    assert folded > 0  # some charts have more than four workloads: their others are folded under them
