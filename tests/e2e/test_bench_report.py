"""The bench's ratios from its phases' figures: what each target divides by what (no process, no timing)."""

from __future__ import annotations

from bench import report


def phase(name: str, wall_s: float, floor: str | None = None, **detail: object) -> report.Phase:
    return report.Phase(name, floor, wall_s, cpu_s=wall_s, peak_rss_mb=100.0, rows=1000, detail=dict(detail) or None)


def built(wall_s: float) -> report.Phase:
    sql_parts = {"series_noise": 2.0, "change_points": 1.0}
    return phase(report.BUILD, wall_s, load_s=wall_s / 2, sql_s=wall_s / 2, sql_parts_s=sql_parts)


def test_the_whole_ingest_is_set_against_reading_and_storing_every_tables_and_statistics_rows():
    phases = [
        phase(report.NORMALIZE, 30.0),
        built(50.0),
        phase(report.READ_ALONE, 10.0),
        phase(report.STORE_ALONE, 20.0),
        phase(report.STATS_OUTPUT, 10.0),
    ]
    summary = report.ratios(phases, 1000)
    assert summary["ingest_vs_floors_ratio"] == 2.0  # (30 + 50) / (10 + 20 + 10)
    assert summary["normalize_vs_read_store_ratio"] == 1.0
    assert any(line.startswith("ingest_vs_floors_ratio 2.0 (target at most 1.5: missed)") for line in report.target_lines(summary))


def test_a_floor_missing_a_part_gives_no_ratio_rather_than_a_flattering_one():
    phases = [phase(report.NORMALIZE, 30.0), built(50.0), phase(report.READ_ALONE, 10.0), phase(report.STORE_ALONE, 20.0)]
    summary = report.ratios(phases, 1000)
    assert summary["ingest_vs_floors_ratio"] is None
    assert "ingest_vs_floors_ratio None (target at most 1.5: not measured)" in "\n".join(report.target_lines(summary))


def test_the_change_point_step_is_a_target_line_against_its_floor():
    phases = [phase(report.SERIES_FLOOR, 4.0), phase(report.SERIES, 5.0, floor=report.SERIES_FLOOR)]
    summary = report.ratios(phases, 1000)
    assert summary["change_points_ratio"] == 1.25
    assert "change_points_ratio 1.25 (target at most 1.5: met)" in "\n".join(report.target_lines(summary))
