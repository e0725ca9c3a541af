"""Staged rows leave out the per-value columns of runs; the assembly joins them back from each snapshot's
workload answers (layout.WORKLOADS) and the catalogs, to the same tables as computing them afresh."""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from conftest import liger_csv, liger_row

from pipelines.assemble import assembly as tables
from pipelines.core import layout, schemas
from pipelines.ingest import staging
from pipelines.ingest.normalize.distinct_cache import DistinctCache
from pipelines.ingest.source.listing import SnapshotRef

CONFIGS = ('{"M": 2048, "dtype": "torch.bfloat16"}', '{"M": 4096, "mode": "full"}', '{"B": 2, "seq_len": 128}')


def stage(warehouse: Path, cache: DistinctCache, commit: str, sequence: int, text: str) -> staging.SnapshotMeta:
    ref = SnapshotRef(
        f"{commit}/data.csv", "test", "benchmark/data/data.csv", commit, datetime(2025, 1, sequence, tzinfo=UTC), "subject", sequence
    )
    return staging.stage_snapshot(warehouse, ref, lambda _ref: text.encode(), cache, ingest_seq=1)


def snapshot_folder(warehouse: Path, meta: staging.SnapshotMeta) -> Path:
    return layout.Layout(warehouse).staged(meta.snapshot_id)


def two_snapshots(warehouse: Path) -> list[staging.SnapshotMeta]:
    cache = DistinctCache()
    first = liger_csv(
        *[liger_row(config=c, x_value=x, timestamp=f"2025-01-01 10:00:0{i}") for i, c in enumerate(CONFIGS) for x in ("1024", "2048")],
        liger_row(config="[1, 2]", timestamp="2025-01-01 11:00:00"),  # not an object: quarantined
    )
    second = liger_csv(liger_row(config=CONFIGS[0], provider="torch", gpu="NVIDIA H100 80GB HBM3", timestamp="2025-01-02 10:00:00"))
    return [stage(warehouse, cache, "c1", 1, first), stage(warehouse, cache, "c2", 2, second)]


def test_staged_rows_leave_out_the_per_value_columns(tmp_path):
    meta = two_snapshots(tmp_path)[0]
    staged = pl.read_parquet(sorted(snapshot_folder(tmp_path, meta).glob("rows-*.parquet")))
    assert set(staged.columns) == set(schemas.RUN_ROWS.names())
    assert not set(staged.columns) & set(schemas.RUN_ROWS_LEFT_OUT)
    assert set(schemas.RUNS.names()) <= set(staged.columns) | set(schemas.RUN_ROWS_LEFT_OUT)


def test_each_snapshot_keeps_the_workload_answers_of_its_own_rows(tmp_path):
    first, second = two_snapshots(tmp_path)
    answers = {m.snapshot_id: pl.read_parquet(snapshot_folder(tmp_path, m) / layout.WORKLOADS) for m in (first, second)}
    configs = {k: sorted(a["extra_benchmark_config_str"].unique().to_list()) for k, a in answers.items()}
    # The second snapshot was staged with a cache that knew every config of the first: it keeps only its own.
    assert configs == {first.snapshot_id: sorted([*CONFIGS, "[1, 2]"]), second.snapshot_id: [CONFIGS[0]]}
    assert answers[second.snapshot_id].height == 1 and answers[second.snapshot_id]["x_value"].to_list() == ["1024"]


def test_tables_from_kept_answers_equal_tables_from_answers_computed_again(tmp_path):
    two_snapshots(tmp_path)
    kept = tables.assemble(tmp_path, None)
    for side_file in layout.Layout(tmp_path).staging.glob(f"*/{layout.WORKLOADS}"):
        side_file.unlink()
    again = tables.assemble(tmp_path, None)
    for name, frame in kept.items():
        assert frame.equals(again[name]), name
    runs = kept["runs"]
    assert runs.height == 7 and runs["workload"].null_count() == 0 and runs["group_id"].n_unique() == 7
    assert set(runs["source_file"]) == {"benchmark/data/data.csv"}


def damage_truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:40])


def damage_garbage(path: Path) -> None:
    path.write_bytes(b"not parquet at all\n" * 10)


def damage_other_columns(path: Path) -> None:
    pl.DataFrame({"extra_benchmark_config_str": ["{}"], "workload": [1]}).write_parquet(path)


def damage_wrong_types(path: Path) -> None:
    pl.read_parquet(path).with_columns(pl.col("workload").cast(pl.Categorical)).write_parquet(path)


@pytest.mark.parametrize("damage", [damage_truncated, damage_garbage, damage_other_columns, damage_wrong_types])
def test_a_damaged_answers_file_is_computed_again_not_an_error(tmp_path, damage):
    two_snapshots(tmp_path)
    kept = tables.assemble(tmp_path, None)
    for side_file in layout.Layout(tmp_path).staging.glob(f"*/{layout.WORKLOADS}"):
        damage(side_file)
    again = tables.assemble(tmp_path, None)
    for name, frame in kept.items():
        assert frame.equals(again[name]), name
