"""The report's pictures: every SVG of the real report drawn inside its frame with its labels, and the
sweep charts, heat maps and changes timeline drawn from values given here, each point where its value is."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from report_reading import SVG, assert_drawn_inside, column, dots, path_points, read_svg, shapes, svg_texts

from pipelines.exports.report import heatmaps, sweeps, timeline
from pipelines.exports.report import history_charts as history
from pipelines.exports.report.implementations import Style
from pipelines.statistics import db

pytest_plugins = ["report_reading"]


# --- the real data -------------------------------------------------------------------------------


def test_every_picture_is_an_svg_with_drawn_axes_and_labels(real_report, real_pages, real_warehouse):
    seen = set()
    for page in real_pages.values():
        for image in page.images:
            path, _ = page.resolve(image["src"])
            assert path.is_file(), f"{page.path.name}: missing {image['src']}"
            assert path.suffix == ".svg"
            root = read_svg(path.read_bytes())
            assert (root.get("width"), root.get("height")) == (image["width"], image["height"])
            assert_drawn_inside(root)
            assert image["alt"]
            seen.add(path)
    # One chart per kernel, GPU, pass and metric that has a passed run, each shown on its kernel's page.
    [charts_expected] = column(
        real_warehouse, "SELECT count(*) FROM (SELECT DISTINCT kernel, gpu_name, pass, metric FROM provider_comparisons)"
    )
    kernel_charts = [p for p in seen if p.parent.parent.name == "kernels" and not p.name.startswith(("history-", "workloads-"))]
    assert len(kernel_charts) == charts_expected
    for chart in kernel_charts:
        texts = svg_texts(read_svg(chart.read_bytes()))
        assert "ratio to baseline" in texts
        assert any(re.fullmatch(r"(latency|peak memory) \(\w+\)", text) for text in texts)
    assert seen == {p.resolve() for p in real_report.folder.rglob("*.svg")}
    assert real_report.images == len(seen)
    assert not list(real_report.folder.rglob("*.png"))


def test_a_sweep_chart_shows_its_implementations_x_values_and_unit(real_report, real_warehouse):
    kernel, gpu = "fused_add_rms_norm", "NVIDIA B200"
    # Every implementation (provider · backend) with a passed run there, the cuTile file's among them.
    rows = db.query(
        real_warehouse,
        f"""SELECT DISTINCT provider || ' · ' || backend, x_value FROM runs WHERE status = 'passed'
            AND kernel = '{kernel}' AND gpu_name = '{gpu}' AND pass = 'full' AND metric = 'speed'""",
    ).rows
    assert rows
    chart = real_report.folder / "img" / "kernels" / kernel / "nvidia-b200-full-speed.svg"
    root = read_svg(chart.read_bytes())
    texts = svg_texts(root)
    assert {name for name, _ in rows} <= set(texts)
    assert {"liger_cutile_fused_add_rms_norm · cutile", "liger_triton_fused_add_rms_norm · cutile"} <= {name for name, _ in rows}
    assert {x for _, x in rows} <= set(texts)
    assert "latency (ms)" in texts and "liger:" in texts
    # The y tick labels are numbers, and there are at least two per panel.
    assert sum(bool(re.fullmatch(r"\d+(\.\d+)?", text)) for text in texts) >= len({x for _, x in rows}) + 4


def test_the_overview_picture_has_a_cell_per_gpu_and_implementation(real_report, real_warehouse):
    root = read_svg(real_report.overview_image.read_bytes())
    texts = svg_texts(root)
    implementations = """SELECT DISTINCT metric, gpu_name, provider || ' · ' || backend AS name
        FROM kernel_scorecard WHERE geomean_ratio > 0"""
    cells = db.query(real_warehouse, f"SELECT metric, count(*) FROM ({implementations}) GROUP BY metric").rows
    for gpu in column(real_warehouse, "SELECT DISTINCT gpu_name FROM kernel_scorecard"):
        assert gpu in texts
    names = column(real_warehouse, f"SELECT DISTINCT name FROM ({implementations})")
    assert set(names) <= set(texts) and {"liger · triton", "liger · cutile"} <= set(names)
    fills = [r.get("fill") for r in shapes(root) if r.tag == f"{SVG}rect"]
    colored = [fill for fill in fills if re.fullmatch("#[0-9a-f]{6}", fill) and fill != heatmaps.NO_DATA]
    assert len(colored) == sum(n for _, n in cells)
    assert {"0.25x", "1x", "4x", "latency", "peak memory"} <= set(texts)


# --- drawn from given values ---------------------------------------------------------------------


def test_string_x_values_keep_their_order_and_numbers_sort():
    positions, log_x = sweeps._x_axis(["llama_3_8b", "qwen2.5_7b", "llama_3_8b"])
    assert positions == {"llama_3_8b": 0.0, "qwen2.5_7b": 1.0} and not log_x
    positions, log_x = sweeps._x_axis(["4096", "1024", "65536"])
    assert list(positions) == ["1024", "4096", "65536"] and log_x
    assert not sweeps._x_axis(["1", "2", "4"])[1]


def test_a_sweep_chart_draws_each_point_where_its_value_is():
    xs = ["1024", "4096", "65536"]
    sweep = sweeps.Sweep(
        "hidden · batch=8",
        "hidden",
        [
            sweeps.Series("liger", xs, [1.0, 4.0, 100.0], [0.9, 3.8, 95.0], [1.1, 4.2, 105.0], [2.0, 2.0, 1.5]),
            sweeps.Series("torch", xs, [2.0, 8.0, 150.0], [None, None, None], [None, None, None], [1.0, 1.0, 1.0]),
        ],
    )
    colors = {"liger": "#1f77b4", "torch": "#ff7f0e"}
    root = read_svg(sweeps.sweep_figure([sweep], "ms", "latency", {k: Style(c) for k, c in colors.items()}).markup)
    assert_drawn_inside(root)
    texts = svg_texts(root)
    assert {"hidden · batch=8", "hidden", "latency (ms)", "ratio to baseline", "liger", "torch", *xs} <= set(texts)
    # 1 to 150 is wide: a log axis with 1-2-5 ticks.
    assert {"1", "2", "5", "10", "20", "50", "100"} <= set(texts)
    liger_values, liger_ratios, _legend = dots(root, colors["liger"])
    torch_values, torch_ratios, _legend = dots(root, colors["torch"])
    # Higher values sit higher (smaller y); x is log2: 1024 -> 4096 is half as far as 4096 -> 65536.
    assert all(t[1] < v[1] for t, v in zip(torch_values, liger_values, strict=True))
    assert [y for _, y in liger_values] == sorted((y for _, y in liger_values), reverse=True)
    (x1, _), (x2, _), (x3, _) = liger_values
    assert (x3 - x2) == pytest.approx(2 * (x2 - x1), abs=0.2)
    # Log scale: each tenfold step is the same height (the value panel's ticks come before the ratio panel's).
    heights: dict[str, float] = {}
    for text in root.iter(f"{SVG}text"):
        heights.setdefault(text.text, float(text.get("y")))
    assert heights["1"] - heights["10"] == pytest.approx(heights["10"] - heights["100"], abs=0.2)
    # The ratio panel: liger's 2x above torch's 1x, which lies on the dashed baseline.
    assert all(li[1] < to[1] for li, to in zip(liger_ratios, torch_ratios, strict=True))
    [baseline] = [path_points(p.get("d")) for p in root.iter(f"{SVG}path") if p.get("stroke-dasharray")]
    assert {y for _, y in torch_ratios} == {baseline[0][1]}
    # The p20-p80 band: a closed, translucent shape in liger's color; none for torch, which has no band.
    bands = [p for p in root.iter(f"{SVG}path") if p.get("fill-opacity")]
    assert [band.get("fill") for band in bands] == [colors["liger"]] and bands[0].get("d").endswith("Z")


def test_a_narrow_sweep_gets_a_linear_axis_and_named_categories_their_order():
    sweep = sweeps.Sweep(
        "model",
        "model",
        [
            sweeps.Series("liger", ["llama_3_8b", "qwen2.5_7b"], [1.0, 1.5], [None, None], [None, None], [2.0, 1.0]),
        ],
    )
    root = read_svg(sweeps.sweep_figure([sweep], "ms", "latency", {"liger": Style("#1f77b4")}).markup)
    texts = svg_texts(root)
    labels = [float(t) for t in texts if re.fullmatch(r"\d+(\.\d+)?", t)]
    assert 1.0 in labels and 1.5 in labels and 100 not in labels
    [values, _ratios, _legend] = dots(root, "#1f77b4")
    assert values[0][0] < values[1][0]  # llama first, as given
    assert texts.index("llama_3_8b") < texts.index("qwen2.5_7b")


def test_names_from_the_data_are_escaped_in_every_picture():
    odd = 'a<b>&"c" \x01\u2603'
    shown = 'a<b>&"c" \ufffd\u2603'
    sweep = sweeps.Sweep(odd, odd, [sweeps.Series(odd, ["1", "2"], [1.0, 2.0], [None, 1.9], [None, 2.1], [None, 1.0])])
    cell = heatmaps.HeatCell(odd, odd, 1.5, 3, 1)
    drawings = [
        sweeps.sweep_figure([sweep], odd, odd, {odd: Style("#1f77b4")}, note=odd),
        heatmaps.scorecard_heatmap([cell], odd),
        heatmaps.summary_heatmap({odd: [cell]}, odd),
        history.history_figure([odd, "b"], [history.Panel(odd, [history.Line(odd, [(0, 1.0), (1, 2.0)])])], odd, odd, {}, odd),
    ]
    for drawing in drawings:
        root = read_svg(drawing.markup)
        assert shown in svg_texts(root)
        assert_drawn_inside(root)


def test_heat_maps_color_each_cell_by_its_ratio():
    cells = [
        heatmaps.HeatCell("rms_norm · full vs torch", "liger", 4.0, 5, 0),
        heatmaps.HeatCell("rms_norm · full vs torch", "liger_triton", 0.25, 0, 5),
        heatmaps.HeatCell("softmax · full vs torch", "liger", 1.0, 1, 1),
    ]
    root = read_svg(heatmaps.scorecard_heatmap(cells, "title").markup)
    texts = svg_texts(root)
    assert {"4.00  5/0", "0.25  0/5", "1.00  1/1", "liger", "liger_triton", "softmax · full vs torch"} <= set(texts)
    fills = [r.get("fill") for r in shapes(root) if r.tag == f"{SVG}rect"]
    # The grey of no data, one cell each, and the color bar; saturated blue for 4x, red for 1/4, white-ish for 1.
    assert fills[0] == heatmaps.NO_DATA and fills[1:4] == [heatmaps.RDBU[-1], heatmaps.RDBU[0], heatmaps.RDBU[5]]
    assert fills[4] == "url(#ratio-ramp)" and root.find(f".//{SVG}linearGradient").get("id") == "ratio-ramp"


def test_the_changes_timeline_marks_each_change_by_its_verdict():
    times = [dt.datetime(2025, 1, 5, tzinfo=dt.UTC), dt.datetime(2025, 6, 1, tzinfo=dt.UTC), dt.datetime(2025, 3, 1, tzinfo=dt.UTC)]
    root = read_svg(timeline.changes_timeline(times, [2.0, 0.5, 1.5], ["improved", "regressed", "improved"]).markup)
    texts = svg_texts(root)
    assert {"improved (2)", "regressed (1)", "2025-02", "2025-04", "2025-06", "1x", "2x", "0.5x"} <= set(texts)
    improved, _legend = dots(root, timeline.IMPROVED)
    regressed, _legend = dots(root, timeline.REGRESSED)
    assert len(improved) == 2 and len(regressed) == 1
    (jan, two), (mar, one_and_half) = improved
    assert jan < mar < regressed[0][0]  # in time order left to right
    assert two < one_and_half < regressed[0][1]  # 2x highest, 0.5x lowest
    empty = read_svg(timeline.changes_timeline([], [], []).markup)
    assert "no change point" in svg_texts(empty)


def test_a_history_chart_draws_each_commit_in_order_and_marks_a_change_between_two():
    commits = ["aaaaaaa", "bbbbbbb", "ccccccc-v0.6.0", "ddddddd"]
    styles = {"liger · triton": Style("#1f77b4"), "liger · cutile": Style("#144d75", "6 3")}
    panel = history.Panel(
        "batch4-hidden4096",
        [
            history.Line("liger · triton", [(0, 1.0), (1, 1.0), (2, 1.5), (3, 1.5)]),
            history.Line("liger · cutile", [(0, 0.5), (1, 0.5), (2, 0.5), (3, 0.5)]),
        ],
        [history.Mark("liger · triton", 1, 2, 1.5, 1 / 1.5, "regressed", "code")],
    )
    root = read_svg(history.history_figure(commits, [panel], "ms", "latency", styles, "x: the commits").markup)
    assert_drawn_inside(root)
    texts = svg_texts(root)
    assert {*commits, "latency (ms)", "0.67x", "liger:", "liger · triton", "liger · cutile", "x: the commits"} <= set(texts)
    [triton, _legend] = dots(root, "#1f77b4")
    xs = [x for x, _ in triton]
    assert xs == sorted(xs) and len(set(xs)) == 4  # one point per commit, oldest left
    assert triton[2][1] < triton[1][1]  # slower after: higher
    [mark] = [p for p in root.iter(f"{SVG}path") if p.get("stroke") == timeline.REGRESSED and p.get("stroke-linecap") != "round"]
    (x, top), (_, bottom) = path_points(mark.get("d"))
    assert x == pytest.approx((xs[1] + xs[2]) / 2, abs=0.1) and bottom > top
    assert not mark.get("stroke-dasharray")  # the code's doing: solid; a host change is dashed
    assert [p for p in root.iter(f"{SVG}path") if p.get("stroke") == "#144d75" and p.get("stroke-dasharray") == "6 3"]
    # A change point without its values (nulls in change_points) is still a line, with no ring and no label.
    panel.marks[:] = [history.Mark("liger · cutile", 0, 1, None, None, "improved", "host")]
    root = read_svg(history.history_figure(commits, [panel], "ms", "latency", styles).markup)
    [mark] = [p for p in root.iter(f"{SVG}path") if p.get("stroke") == timeline.IMPROVED]
    assert mark.get("stroke-dasharray") and not [t for t in svg_texts(root) if t.endswith("x") and t[0].isdigit()]


def test_a_candidate_change_point_is_drawn_unconfirmed_and_a_label_near_the_edge_left_of_its_line():
    commits = [f"c{i:06d}" for i in range(30)]
    panel = history.Panel(
        "batch4-hidden4096",
        [history.Line("liger · triton", [(i, 1.0 if i < 29 else 1.7) for i in range(30)])],
        [history.Mark("liger · triton", 28, 29, 1.7, 1 / 1.7, "regressed", "code", candidate=True)],
    )
    root = read_svg(history.history_figure(commits, [panel], "ms", "latency", {}).markup)
    assert_drawn_inside(root)
    # Between the two newest commits, at the plot's right edge: its label ends with `?` and is still drawn.
    assert "0.59x?" in svg_texts(root)
    [mark] = [p for p in root.iter(f"{SVG}path") if p.get("stroke") == timeline.REGRESSED and p.get("stroke-linecap") != "round"]
    assert mark.get("stroke-dasharray") == "1 2"
    [label] = [t for t in root.iter(f"{SVG}text") if t.text == "0.59x?"]
    (x, _), _ = path_points(mark.get("d"))
    assert float(label.get("x")) < x  # left of its line: there is no room right of it


def test_the_changes_timeline_draws_candidates_faint_under_their_own_legend():
    times = [dt.datetime(2025, 1, 5, tzinfo=dt.UTC), dt.datetime(2025, 6, 1, tzinfo=dt.UTC)]
    root = read_svg(timeline.changes_timeline(times, [0.5, 0.6], ["regressed", "regressed"], ["confirmed", "candidate"]).markup)
    assert {"regressed (1)", "regressed (unconfirmed) (1)"} <= set(svg_texts(root))
    faint = [p for p in root.iter(f"{SVG}path") if p.get("stroke-opacity") == str(timeline.CANDIDATE_OPACITY)]
    assert len(faint) == 2  # the point and its legend's


def test_memory_axes_start_at_zero():
    commits = ["a", "b", "c"]
    panel = history.Panel("seq128", [history.Line("liger · triton", [(0, 2561.0), (1, 2564.0), (2, 2562.0)])])
    memory = svg_texts(read_svg(history.history_figure(commits, [panel], "MiB", "memory", {}, from_zero=True).markup))
    latency = svg_texts(read_svg(history.history_figure(commits, [panel], "MiB", "memory", {}).markup))
    assert "0" in memory and "0" not in latency
    series = [sweeps.Series("liger · triton", ["1", "2"], [2561.0, 2564.0], [2561.0, 2564.0], [2561.0, 2564.0], [1.0, 1.0])]
    sweep = [sweeps.Sweep("seq", "seq", series)]
    assert "0" in svg_texts(read_svg(sweeps.sweep_figure(sweep, "MiB", "memory", {}, from_zero=True).markup))
    assert "0" not in svg_texts(read_svg(sweeps.sweep_figure(sweep, "MiB", "memory", {}).markup))
