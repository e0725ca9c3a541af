"""SPEC section 5: conflicts are shown. A row whose run (key and timestamp) was already seen with other values (a y
value, the unit or the version) keeps nothing of the run: the run keeps the values first seen, and the row waits in
quarantine naming both snapshots and what differs, counted as quarantined for its snapshot and absent from
run_snapshots and from the run's provenance. Every snapshot still rebuilds byte for byte, conflict rows included."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from conftest import HEADER, UpstreamRepo, build_warehouse, liger_row
from generated_csv import COLUMNS, PROFILE, RUN_KEY, Row, row_line, rows
from hypothesis import event, given, settings
from hypothesis import strategies as st
from robustness_tally import trial
from snapshot_oracle import RAW_FIELD, assemble_and_check, scratch, stage

from pipelines.__main__ import main
from pipelines.assemble import checks, external_sort
from pipelines.exports import liger_csv as liger_csv_export

pytest_plugins = ["robustness_report"]

DATA = "benchmark/data/all_benchmark_data.csv"
A = liger_row(x_value="1024")
A_RERUN = liger_row(x_value="1024", y50="0.7", version="0.6.0")  # the same run (key, timestamp) with another median and version
B = liger_row(x_value="2048")
C = liger_row(x_value="4096")
C_OTHER_UNIT = liger_row(x_value="4096", unit="s")
D = liger_row(x_value="8192", y80="0.6")
D_OTHER_P80 = liger_row(x_value="8192", y80="")


def text(*rows: str) -> str:
    return "".join(line + "\r\n" for line in (HEADER, *rows))


VERSIONS = [
    text(A, B, C),
    text(A_RERUN, B, C_OTHER_UNIT, D),  # rows 1 and 3 conflict with the first version
    text(A, B, C_OTHER_UNIT, D_OTHER_P80),  # A as first seen again; rows 3 and 4 conflict
]


def history(repo: UpstreamRepo) -> list[str]:
    """The versions of one file, committed; the commits, oldest first."""
    return [repo.commit({DATA: version}, f"version {n}", date=f"2025-01-0{n}T00:00:00+00:00") for n, version in enumerate(VERSIONS, 1)]


@pytest.mark.parametrize("bucket_rows", [external_sort.BUCKET_ROWS, 2], ids=["one bucket", "buckets of 2 rows"])
def test_a_conflict_is_quarantined_naming_both_snapshots_and_every_snapshot_rebuilds(
    upstream_repo, tmp_path, monkeypatch, capsys, bucket_rows
):
    # A run's rows meet in one bucket however many there are: a conflict is found across buckets' bounds too.
    monkeypatch.setattr(external_sort, "BUCKET_ROWS", bucket_rows)
    commits = history(upstream_repo)
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    snapshots = pl.read_parquet(warehouse / "snapshots.parquet").sort("sequence")
    first, second, third = snapshots["snapshot_id"].to_list()
    assert [s.split("/")[0] for s in (first, second, third)] == [c[:12] for c in commits]

    quarantine = pl.read_parquet(warehouse / "quarantine.parquet")
    held = {(s, n): reason for s, n, reason in quarantine.select("snapshot_id", "row_number", "reason").iter_rows()}
    assert set(held) == {(second, 1), (second, 3), (third, 3), (third, 4)}
    runs = pl.read_parquet(warehouse / "runs.parquet")
    run_of = {r["x_value"]: r for r in runs.iter_rows(named=True)}
    assert held[second, 1] == (
        f"conflict: run {run_of['1024']['run_id']} was first seen in {first} with other values "
        f"(y_value_50: 0.5 there, 0.7 here; y_value_80: 0.6 there, 0.7 here; liger_version: 0.5.0 there, 0.6.0 here); "
        f"this row of {second} is not a second run"
    )
    assert f"first seen in {first}" in held[second, 3] and "(metric_unit: ms there, s here)" in held[second, 3]
    assert f"first seen in {first}" in held[third, 3] and f"this row of {third}" in held[third, 3]
    assert f"first seen in {second}" in held[third, 4] and "(y_value_80: 0.6 there, (empty) here)" in held[third, 4]

    # The runs keep the values first seen; a conflicting row is no row of its run.
    assert runs.height == 4
    assert (run_of["1024"]["value"], run_of["1024"]["liger_version"], run_of["4096"]["raw_unit"]) == (500_000.0, "0.5.0", "ms")
    assert run_of["8192"]["p80"] == 600_000.0
    provenance = {x: (r["first_seen_snapshot"], r["last_seen_snapshot"], r["in_latest"]) for x, r in run_of.items()}
    assert provenance == {
        "1024": (first, third, True),  # the third version holds it as first seen
        "2048": (first, third, True),
        "4096": (first, first, False),  # the newest file holds only a conflicting row of it
        "8192": (second, second, False),
    }
    mapped = pl.read_parquet(warehouse / "run_snapshots.parquet")
    placed = set(mapped.select("snapshot_id", "row_number").iter_rows())
    assert not placed & set(held) and len(placed) + len(held) == 3 + 4 + 4
    counts = {r["snapshot_id"]: (r["row_count"], r["accepted"], r["quarantined"]) for r in snapshots.iter_rows(named=True)}
    assert counts == {first: (3, 3, 0), second: (4, 2, 2), third: (4, 2, 2)}
    assert checks.snapshot_accounting(warehouse).passed, checks.snapshot_accounting(warehouse).description

    # Each snapshot, exported, is upstream's file byte for byte: the conflicting rows are their quarantined text.
    monkeypatch.setenv("WAREHOUSE_DIR", str(warehouse))
    for version, snapshot_id in zip(VERSIONS, (first, second, third)):
        out = tmp_path / "export.csv"
        assert main(["export-liger-csv", "--snapshot", snapshot_id, "--out", str(out)]) == 0, capsys.readouterr().err
        assert out.read_bytes() == version.encode(), snapshot_id


@pytest.mark.slow
def test_the_real_history_of_both_streams_has_no_conflict_and_nothing_quarantined(upstream_warehouse):
    # Measured: 83 snapshots, 137,233 rows, 90,207 runs; every repeat of a run carries its first values.
    quarantine = pl.read_parquet(upstream_warehouse / "quarantine.parquet")
    assert quarantine.filter(pl.col("reason").str.starts_with("conflict:")).height == 0
    assert quarantine.height == 0
    snapshots = pl.read_parquet(upstream_warehouse / "snapshots.parquet")
    assert (snapshots.height, snapshots["row_count"].sum(), snapshots["quarantined"].sum()) == (83, 137_233, 0)
    assert pl.read_parquet(upstream_warehouse / "run_snapshots.parquet").height == 137_233


MISSING = ("", "nan", "-nan", "+nan")


def measured(values: dict[str, str]) -> tuple:
    """What a repeat of a run must carry unchanged, read independently of the code under test."""

    def number(text: str) -> float | None:
        return None if text.strip().lower() in MISSING else float(text)

    return (*(number(values[c]) for c in ("y_value_50", "y_value_20", "y_value_80")), values["metric_unit"], values["liger_version"])


@st.composite
def histories_with_reruns(draw) -> list[list[Row]]:
    """Versions of one file drawn from a pool of rows, some of them a row again with another p80 or version."""
    pool = draw(st.lists(rows(), min_size=1, max_size=6))
    for row in list(pool):
        if row.expect == "accept" and draw(st.booleans()):
            values = dict(row.values)
            if draw(st.booleans()):
                p80 = measured(values)[2]
                values["y_value_80"] = repr(p80 * 2 + 1) if p80 is not None else "2e6"
            else:
                values["liger_version"] += "-rerun"
            pool.append(replace(row, values=values))
    return [
        [pool[i] for i in draw(st.lists(st.sampled_from(range(len(pool))), unique=True, max_size=8))]
        for _ in range(draw(st.integers(1, 4)))
    ]


@pytest.mark.slow
@settings(PROFILE)
@given(histories_with_reruns())
def test_any_history_of_reruns_quarantines_exactly_the_conflicts_and_rebuilds(versions: list[list[Row]]):
    with trial("generated input", "history with runs repeated with other values"), scratch() as folder:
        warehouse = Path(folder)
        first: dict[tuple, tuple] = {}
        expected: dict[tuple[str, int], str] = {}
        files: dict[str, bytes] = {}
        for sequence, version in enumerate(versions, 1):
            lines = [HEADER] + [row_line(row, list(COLUMNS), always_quote=False).decode("utf-8", "surrogateescape") for row in version]
            data = "\n".join(lines).encode("utf-8", "surrogateescape") + b"\n"
            meta = stage(warehouse, data, snapshot=f"c{sequence}", sequence=sequence)
            files[meta.snapshot_id] = data
            for number, row in enumerate(version, 1):
                if row.expect != "accept":
                    continue
                key = tuple(row.values[c] for c in RUN_KEY)
                seen = first.setdefault(key, (measured(row.values), meta.snapshot_id))
                if seen[0] != measured(row.values):
                    expected[meta.snapshot_id, number] = seen[1]
        event("some conflict" if expected else "no conflict")
        frames = assemble_and_check(warehouse)

        conflicts = frames["quarantine"].filter(pl.col("reason").str.starts_with("conflict:"))
        found = {(s, n): reason for s, n, reason in conflicts.select("snapshot_id", "row_number", "reason").iter_rows()}
        assert found.keys() == expected.keys()
        for (snapshot_id, _), reason in found.items():
            assert f"first seen in {expected[snapshot_id, _]} " in reason and f"this row of {snapshot_id} " in reason
        runs = frames["runs"]
        assert runs.height == len(first)
        for run in runs.iter_rows(named=True):
            values = {c: run[RAW_FIELD[c]] or "" for c in COLUMNS}
            key = tuple(values[c] for c in RUN_KEY)
            assert (measured(values), run["first_seen_snapshot"]) == first[key], "a run keeps the values first seen"
        for snapshot_id, data in files.items():
            snapshot = liger_csv_export.resolve_snapshot(warehouse, snapshot_id)
            if not (snapshot.layout or {}).get("inexact"):
                assert liger_csv_export.rebuild(warehouse, snapshot) == data, snapshot_id


def test_a_conflict_names_its_run_by_the_id_made_unique(tmp_path):
    # Two runs whose ids coincide (their configs differ only in the dropped key `mode`) each get a suffix; the
    # conflict of one names that one's id, and neither run's rows lose their place.
    first = text(liger_row(config='{"mode": "x"}'), liger_row(config="{}")).encode()
    second = text(liger_row(config='{"mode": "x"}', y50="0.55"), liger_row(config="{}")).encode()
    metas = [stage(tmp_path, first, "c1", 1), stage(tmp_path, second, "c2", 2)]
    frames = assemble_and_check(tmp_path)
    run_of = {"mode" if "mode" in r["raw_config"] else "none": r["run_id"] for r in frames["runs"].iter_rows(named=True)}
    assert len(set(run_of.values())) == 2 and all("~" in run_id for run_id in run_of.values())
    [(snapshot_id, row_number, reason)] = frames["quarantine"].select("snapshot_id", "row_number", "reason").rows()
    assert (snapshot_id, row_number) == ("c2/all_benchmark_data.csv", 1)
    assert reason.startswith(f"conflict: run {run_of['mode']} was first seen in c1/all_benchmark_data.csv")
    assert sorted(frames["run_snapshots"].rows()) == sorted(
        [
            (run_of["mode"], "c1/all_benchmark_data.csv", 1),
            (run_of["none"], "c1/all_benchmark_data.csv", 2),
            (run_of["none"], "c2/all_benchmark_data.csv", 2),
        ]
    )
    for meta, data in zip(metas, (first, second)):
        assert liger_csv_export.rebuild(tmp_path, liger_csv_export.resolve_snapshot(tmp_path, meta.snapshot_id)) == data
