"""Liger CSV round trip (every snapshot rebuilt from the tables) and the Bencher Metric Format export."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import HEADER, LATEST, build_warehouse, git, liger_row, require_real

from pipelines.__main__ import main
from pipelines.defs.exports.liger_exports import bmf_exports, latest_liger_csvs
from pipelines.defs.resources import Warehouse
from pipelines.exports import bmf, liger_csv, ndjson

DATA = "benchmark/data/all_benchmark_data.csv"
CUTILE = "benchmark/data/all_benchmark_data_cutile.csv"
Y_COLUMNS = {"y_value_50", "y_value_20", "y_value_80"}
SEED_BMF = ("nvidia-a100-sxm4-80gb.json", "fused_linear_cpo_loss/full/huggingface/batch4-hidden4096-seq1024-vocab128256-bf16")


def records(data: bytes) -> list[list[str]]:
    """Header and rows as upstream's readers see them (blank lines are no rows)."""
    return [fields for fields in csv.reader(io.StringIO(data.decode("utf-8"), newline="")) if fields]


def as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def same_field(column: str, original: str, rebuilt: str) -> bool:
    """Text equal, or for a y value the same float (nan counts as equal to nan)."""
    if original == rebuilt:
        return True
    if column not in Y_COLUMNS:
        return False
    a, b = as_number(original), as_number(rebuilt)
    return a is not None and b is not None and (a == b or (math.isnan(a) and math.isnan(b)))


def assert_same_file(original: bytes, rebuilt: bytes, where: str) -> None:
    expected, got = records(original), records(rebuilt)
    assert got[0] == expected[0], f"{where}: header"
    assert len(got) == len(expected), f"{where}: {len(got) - 1} rows rebuilt, {len(expected) - 1} upstream"
    header = expected[0]
    for number, (want, have) in enumerate(zip(expected[1:], got[1:]), start=1):
        assert len(have) == len(want), f"{where} row {number}: {have}"
        for column, a, b in zip(header, want, have):
            assert same_field(column, a, b), f"{where} row {number} {column}: upstream {a!r}, rebuilt {b!r}"


def crlf(*rows: str, header: str = HEADER) -> str:
    return "".join(line + "\r\n" for line in (header, *rows))


def git_show(clone: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "show", f"{commit}:{path}"], cwd=clone, capture_output=True, check=True).stdout


# --- the real bundle: every snapshot --------------------------------------------------------------


@pytest.fixture(scope="module")
def rebuilt_snapshots(real_warehouse: Path, real_clone: Path) -> list[tuple[str, bytes, bytes]]:
    """(snapshot_id, upstream bytes, rebuilt bytes) for every snapshot of the bundle."""
    snapshots = pl.read_parquet(real_warehouse / "snapshots.parquet")
    out = []
    for row in snapshots.iter_rows(named=True):
        rebuilt = liger_csv.rebuild(real_warehouse, liger_csv.resolve_snapshot(real_warehouse, row["snapshot_id"]))
        out.append((row["snapshot_id"], git_show(real_clone, row["commit"], row["source_file"]), rebuilt))
    return out


def test_every_snapshot_of_the_bundle_rebuilds_from_the_tables(rebuilt_snapshots):
    assert len(rebuilt_snapshots) == 40
    for snapshot_id, original, rebuilt in rebuilt_snapshots:
        assert_same_file(original, rebuilt, snapshot_id)
    assert sum(len(records(rebuilt)) - 1 for _, _, rebuilt in rebuilt_snapshots) == 48_173


def test_rebuilt_files_are_the_originals_byte_for_byte(rebuilt_snapshots):
    # Quoting, line endings, number text, blank lines and a missing final newline.
    for snapshot_id, original, rebuilt in rebuilt_snapshots:
        assert rebuilt == original, snapshot_id


def test_pandas_reads_a_rebuilt_file_as_it_reads_upstreams(rebuilt_snapshots):
    # Upstream's benchmark visualizer reads these files with pandas.read_csv.
    pd = pytest.importorskip("pandas")
    for snapshot_id, original, rebuilt in rebuilt_snapshots:
        pd.testing.assert_frame_equal(pd.read_csv(io.BytesIO(original)), pd.read_csv(io.BytesIO(rebuilt)), obj=snapshot_id)


def test_latest_names_the_newest_snapshot_of_a_file(real_warehouse: Path):
    latest = liger_csv.resolve_snapshot(real_warehouse, "latest", "all_benchmark_data.csv")
    assert latest.snapshot_id == "76f16f8278cc/all_benchmark_data.csv"
    rebuilt = liger_csv.rebuild(real_warehouse, latest)
    assert rebuilt == require_real(LATEST / "all_benchmark_data.csv").read_bytes()
    with pytest.raises(liger_csv.ExportError, match="several files are at head"):
        liger_csv.resolve_snapshot(real_warehouse, "latest")


# --- Bencher Metric Format on the real bundle -----------------------------------------------------


@pytest.fixture(scope="module")
def real_bmf(real_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("bmf")
    counts = bmf.write_bmf(real_warehouse, out)
    files = {path.name: json.loads(path.read_text()) for path in out.glob("*.json")}
    assert counts == {name: len(document) for name, document in files.items()}
    return files


def test_bmf_has_the_seed_runs_median_in_ns(real_bmf):
    file, name = SEED_BMF
    assert real_bmf[file][name] == {"latency": {"value": 77002724.0, "lower_value": 77002724.0, "upper_value": 77002724.0}}


def test_bmf_structure(real_bmf):
    assert real_bmf, "no BMF file written"
    for file, document in real_bmf.items():
        for name, measures in document.items():
            assert isinstance(name, str) and 0 < len(name) <= 1024, (file, name)
            assert measures and set(measures) <= {"latency", "peak_memory"}, (file, name)
            for measure in measures.values():
                assert set(measure) <= {"value", "lower_value", "upper_value"} and "value" in measure
                assert all(isinstance(v, float) and math.isfinite(v) for v in measure.values())
                value = measure["value"]
                assert measure.get("lower_value", value) <= value <= measure.get("upper_value", value)
            assert ("/memory/" in name) == ("peak_memory" in measures), name


def test_bmf_holds_the_latest_passed_run_of_each_name_in_the_newest_snapshots(real_warehouse: Path, real_bmf):
    runs = pl.read_parquet(real_warehouse / "runs.parquet")
    current = runs.filter(pl.col("in_latest") & (pl.col("status") == "passed")).with_columns(
        pl.format("{}/{}/{}", "benchmark", "provider", "workload_slug").alias("name"),
        pl.col("gpu_name").str.to_lowercase().str.replace_all("[^a-z0-9]+", "-").str.strip_chars("-").alias("file") + ".json",
    )
    assert sum(len(d) for d in real_bmf.values()) == current.select("file", "name").n_unique()
    assert set(real_bmf) == set(current["file"].unique())
    # One workload reached by two sweeps: the later run is the one exported.
    shared = current.filter(pl.struct("file", "name").is_duplicated()).sort("observed_at", "run_id")
    assert shared.height > 0
    for group in shared.partition_by("file", "name"):
        newest = group.row(-1, named=True)
        measure = "peak_memory" if newest["metric"] == "memory" else "latency"
        assert real_bmf[newest["file"]][newest["name"]][measure]["value"] == newest["value"]
    for run in current.sample(50, seed=5).iter_rows(named=True):
        measures = real_bmf[run["file"]][run["name"]]
        [(measure, values)] = measures.items()
        if current.filter((pl.col("file") == run["file"]) & (pl.col("name") == run["name"])).height == 1:
            assert values["value"] == run["value"]
            assert values.get("lower_value") == run["p20"] and values.get("upper_value") == run["p80"]
        assert measure == ("peak_memory" if run["metric"] == "memory" else "latency")


# --- small repositories: quarantine, failed runs, extra columns, the assets and the CLI ------------


def small_warehouse(upstream_repo, tmp_path: Path, commits: list[dict[str, str]]) -> Path:
    for index, files in enumerate(commits):
        upstream_repo.commit(files, f"commit {index}", date=f"2025-01-0{index + 1}T00:00:00+00:00")
    return build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")


def snapshot_ids(warehouse: Path) -> list[str]:
    return pl.read_parquet(warehouse / "snapshots.parquet")["snapshot_id"].to_list()


def test_quarantined_and_failed_rows_come_back_in_place(upstream_repo, tmp_path):
    good = liger_row()
    failed = liger_row(provider="torch", y50="nan", y20="", y80="0.7")
    bad_config = liger_row(provider="huggingface", config="[1, 2]")
    short = "rms_norm,liger,forward,speed,ms,H,hidden size,2048,0.5"
    labelled = liger_row(x_label='"hidden size, in elements"', x_value="4096", timestamp="2025-01-01 10:00:01")
    memory = liger_row(metric="memory", unit="MB", y50="80.0", y20="79.5", y80="80.25", timestamp="2025-01-01 10:00:02")
    first = crlf(good, failed, bad_config, short, labelled, memory)
    second = crlf(memory, labelled, good)  # a re-ordered file: order comes from the snapshot, not the run
    warehouse = small_warehouse(upstream_repo, tmp_path, [{DATA: first}, {DATA: second}])
    first_id, second_id = snapshot_ids(warehouse)
    quarantine = pl.read_parquet(warehouse / "quarantine.parquet")
    assert sorted(quarantine["row_number"].to_list()) == [3, 4]
    assert liger_csv.rebuild(warehouse, liger_csv.resolve_snapshot(warehouse, first_id)).decode() == first
    assert liger_csv.rebuild(warehouse, liger_csv.resolve_snapshot(warehouse, second_id)).decode() == second


def test_numbers_come_from_the_measurements_table(upstream_repo, tmp_path):
    warehouse = small_warehouse(upstream_repo, tmp_path, [{DATA: crlf(liger_row(y50="0.50", y20="4e-1", y80="0.6"))}])
    [snapshot_id] = snapshot_ids(warehouse)
    rebuilt = liger_csv.rebuild(warehouse, liger_csv.resolve_snapshot(warehouse, snapshot_id))
    # The verbatim text, as it reads as the measurement's raw value.
    assert records(rebuilt)[1][8:11] == ["0.50", "4e-1", "0.6"]
    measurements = pl.read_parquet(warehouse / "measurements.parquet")
    measurements.with_columns(pl.col("raw_value") * 2).write_parquet(warehouse / "measurements.parquet")
    # Other numbers in the table: written as Python writes them, and the file is no longer the original.
    with pytest.raises(liger_csv.NotExact, match="rebuilds to other bytes than the original"):
        liger_csv.rebuild(warehouse, liger_csv.resolve_snapshot(warehouse, snapshot_id))
    doubled = liger_csv.rebuild(warehouse, liger_csv.resolve_snapshot(warehouse, snapshot_id), verify=False)
    assert records(doubled)[1][8:11] == ["1.0", "0.8", "1.2"]


def test_extra_columns_and_a_header_without_optional_columns(upstream_repo, tmp_path):
    header = HEADER.replace(",x_label", "").replace(",liger_version", "") + ",torch_version"
    row = "rms_norm,liger,forward,speed,ms,H,1024,0.5,0.4,0.6,{},NVIDIA A100-SXM4-80GB,2025-01-01 10:00:00,2.5.1"
    text = crlf(row, header=header)
    warehouse = small_warehouse(upstream_repo, tmp_path, [{DATA: text}])
    [snapshot_id] = snapshot_ids(warehouse)
    assert liger_csv.rebuild(warehouse, liger_csv.resolve_snapshot(warehouse, snapshot_id)).decode() == text


def test_a_snapshot_of_failed_runs_only_and_a_rejected_snapshot_rebuild_too(upstream_repo, tmp_path):
    only_failed = crlf(liger_row(y50="nan", y20="nan", y80="nan"))
    rejected = crlf("a,b", "c,d", header="kernel_name,foo")  # every row quarantined with the snapshot's reason
    warehouse = small_warehouse(upstream_repo, tmp_path, [{DATA: only_failed, CUTILE: rejected}])
    for snapshot_id in snapshot_ids(warehouse):
        expected = rejected if snapshot_id.endswith("cutile.csv") else only_failed
        assert liger_csv.rebuild(warehouse, liger_csv.resolve_snapshot(warehouse, snapshot_id)).decode() == expected


def test_a_missing_row_is_an_error_not_a_shorter_file(upstream_repo, tmp_path):
    warehouse = small_warehouse(upstream_repo, tmp_path, [{DATA: crlf(liger_row(), liger_row(provider="torch"))}])
    [snapshot_id] = snapshot_ids(warehouse)
    placed = pl.read_parquet(warehouse / "run_snapshots.parquet")
    placed.filter(pl.col("row_number") != 2).write_parquet(warehouse / "run_snapshots.parquet")
    with pytest.raises(liger_csv.ExportError, match="has 2 rows but the tables place 1"):
        liger_csv.rebuild(warehouse, liger_csv.resolve_snapshot(warehouse, snapshot_id))


def test_export_assets_write_latest_csvs_and_bmf_and_drop_stale_files(upstream_repo, tmp_path):
    main_file = crlf(liger_row(), liger_row(provider="huggingface", y50="0.9", y20="0.8", y80="1.0"))
    cutile = crlf(liger_row(provider="cutile", y50="0.3", y20="0.25", y80="0.35", gpu="NVIDIA B200"))
    warehouse = small_warehouse(upstream_repo, tmp_path, [{DATA: main_file, CUTILE: cutile}])
    exports = warehouse / "exports"
    (exports / "liger_csv").mkdir(parents=True)
    (exports / "liger_csv" / "gone.csv").write_text("old")
    (exports / "bmf").mkdir()
    (exports / "bmf" / "nvidia-gone.json").write_text("{}")
    resource = Warehouse(
        warehouse_dir=str(warehouse),
        source=str(upstream_repo.path),
        branch="main",
        file_glob="benchmark/data/all_benchmark_data*.csv",
        cache_dir=str(tmp_path / "cache"),
        baselines=["huggingface"],
    )
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([latest_liger_csvs, bmf_exports], resources={"warehouse": resource}, instance=instance)
    assert result.success
    assert sorted(p.name for p in (exports / "liger_csv").iterdir()) == [Path(DATA).name, Path(CUTILE).name]
    assert (exports / "liger_csv" / "all_benchmark_data.csv").read_bytes().decode() == main_file
    assert (exports / "liger_csv" / "all_benchmark_data_cutile.csv").read_bytes().decode() == cutile
    assert sorted(p.name for p in (exports / "bmf").iterdir()) == ["nvidia-a100-sxm4-80gb.json", "nvidia-b200.json"]
    b200 = json.loads((exports / "bmf" / "nvidia-b200.json").read_text())
    bounds = {"value": 300000.0, "lower_value": 250000.0, "upper_value": 350000.0}
    assert b200 == {"rms_norm/forward/cutile/m2048-hidden1024-bf16": {"latency": bounds}}
    [csv_event] = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("latest_liger_csvs")]
    assert csv_event.materialization.metadata["dagster/row_count"].value == 3


def test_cli_export_liger_csv(upstream_repo, tmp_path, monkeypatch, capsys):
    text = crlf(liger_row(), liger_row(provider="huggingface"))
    warehouse = small_warehouse(upstream_repo, tmp_path, [{DATA: text}, {DATA: crlf(liger_row())}])
    monkeypatch.setenv("WAREHOUSE_DIR", str(warehouse))
    first_id, _ = snapshot_ids(warehouse)
    out = tmp_path / "out" / "first.csv"
    assert main(["export-liger-csv", "--snapshot", first_id, "--out", str(out)]) == 0
    assert out.read_bytes().decode() == text
    latest = tmp_path / "latest.csv"
    assert main(["export-liger-csv", "--snapshot", "latest", "--file", "all_benchmark_data.csv", "--out", str(latest)]) == 0
    assert latest.read_bytes().decode() == crlf(liger_row())
    capsys.readouterr()
    assert main(["export-liger-csv", "--snapshot", "no/such.csv"]) == 1
    assert "no snapshot 'no/such.csv'" in capsys.readouterr().err
    assert main(["export-liger-csv", "--snapshot", "latest", "--file", "other.csv"]) == 1
    assert "files at head are: all_benchmark_data.csv" in capsys.readouterr().err
    assert main(["export-bmf", "--out", str(tmp_path / "bmf")]) == 0
    assert json.loads((tmp_path / "bmf" / "nvidia-a100-sxm4-80gb.json").read_text())


def test_latest_exports_go_on_past_a_name_clash_and_a_file_that_cannot_be_rebuilt(upstream_repo, tmp_path):
    """Two files at head with one name get distinct exports, and a newest snapshot the tables cannot give back
    byte for byte is left out with a warning, while the others are written: one odd file never stops the export."""
    nested = "benchmark/data/all_benchmark_data_v2/all_benchmark_data.csv"
    upstream_repo.commit(
        {DATA: "\n".join([HEADER, liger_row()]) + "\n", nested: "\n".join([HEADER, liger_row(provider="torch")]) + "\n"}, "two"
    )
    # A row that is not UTF-8 is quarantined; its bytes are not kept, so its snapshot cannot be rebuilt exactly.
    (upstream_repo.path / CUTILE).write_bytes(("\n".join([HEADER, liger_row(kernel="geglu")]) + "\n").encode() + b"bad,\xff\xfe\n")
    git(upstream_repo.path, "add", CUTILE)
    git(upstream_repo.path, "commit", "--quiet", "-m", "not utf-8")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    assert pl.read_parquet(warehouse / "snapshots.parquet")["source_file"].sort().to_list() == sorted([DATA, CUTILE, nested])
    warnings: list[str] = []
    written = liger_csv.write_latest(warehouse, tmp_path / "out", warn=warnings.append)
    assert written == {"benchmark__data__all_benchmark_data.csv": 1, nested.replace("/", "__"): 1}
    assert (tmp_path / "out" / nested.replace("/", "__")).read_bytes() == (upstream_repo.path / nested).read_bytes()
    [warning] = warnings
    assert warning.startswith("all_benchmark_data_cutile.csv not exported:") and "UTF-8" in warning


def test_latest_csvs_keep_the_files_whose_inputs_are_unchanged_and_rebuild_the_rest(upstream_repo, tmp_path):
    """A file of the export before whose snapshot's rows are the same is copied, not rebuilt; a new version of a file,
    or a kept file changed in place (its size the same), is rebuilt: either way the bytes are upstream's."""
    upstream_repo.commit(
        {DATA: "\n".join([HEADER, liger_row()]) + "\n", CUTILE: "\n".join([HEADER, liger_row(kernel="geglu")]) + "\n"}, "one"
    )
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    first, digests = liger_csv.write_latest_digested(warehouse, tmp_path / "first", code="v")
    upstream_repo.commit({DATA: "\n".join([HEADER, liger_row(), liger_row(x_value="2048")]) + "\n"}, "two")
    build_warehouse(warehouse, str(upstream_repo.path), tmp_path / "cache")
    rebuilt: list[str] = []
    original = liger_csv.rebuild

    def counted(warehouse, snapshot, verify=True, inputs=None):
        rebuilt.append(snapshot.file_name)
        return original(warehouse, snapshot, verify, inputs)

    kept = liger_csv.Kept(tmp_path / "first", digests)
    liger_csv.rebuild = counted
    try:
        _, again = liger_csv.write_latest_digested(warehouse, tmp_path / "second", kept=kept, code="v")
        assert rebuilt == ["all_benchmark_data.csv"]
        assert again["all_benchmark_data_cutile.csv"] == digests["all_benchmark_data_cutile.csv"]
        # Another code version, or a kept file whose bytes are no longer upstream's, is rebuilt.
        rebuilt.clear()
        liger_csv.write_latest_digested(warehouse, tmp_path / "third", kept=kept, code="w")
        assert sorted(rebuilt) == ["all_benchmark_data.csv", "all_benchmark_data_cutile.csv"]
        rebuilt.clear()
        kept_file = tmp_path / "first" / "all_benchmark_data_cutile.csv"
        kept_file.write_bytes(kept_file.read_bytes().replace(b"geglu", b"GEGLU"))
        liger_csv.write_latest_digested(warehouse, tmp_path / "fourth", kept=kept, code="v")
        assert sorted(rebuilt) == ["all_benchmark_data.csv", "all_benchmark_data_cutile.csv"]
    finally:
        liger_csv.rebuild = original
    for folder in ("second", "third", "fourth"):
        for name, path in ((DATA, "all_benchmark_data.csv"), (CUTILE, "all_benchmark_data_cutile.csv")):
            assert (tmp_path / folder / path).read_bytes() == (upstream_repo.path / name).read_bytes(), (folder, path)
    assert set(first) == {"all_benchmark_data.csv", "all_benchmark_data_cutile.csv"}


def test_resource_documents_keep_the_lines_of_unchanged_runs(upstream_repo, tmp_path):
    """Each run whose row and measurements are unchanged takes its line from the runs file before; the file is the one
    written whole, and a kept file changed since it was written is not read."""
    upstream_repo.commit({DATA: "\n".join([HEADER, liger_row(), liger_row(x_value="2048")]) + "\n"}, "one")
    warehouse = build_warehouse(tmp_path / "warehouse", str(upstream_repo.path), tmp_path / "cache")
    _, digests, sha256 = ndjson.write_ndjson_digested(warehouse, tmp_path / "first", code="v")
    digests.write_parquet(tmp_path / "digests.parquet")
    upstream_repo.commit({CUTILE: "\n".join([HEADER, liger_row(kernel="geglu")]) + "\n"}, "two")
    build_warehouse(warehouse, str(upstream_repo.path), tmp_path / "cache")
    whole, _, whole_sha256 = ndjson.write_ndjson_digested(warehouse, tmp_path / "whole", code="v")
    kept = ndjson.Kept(tmp_path / "first" / "runs.ndjson", sha256, tmp_path / "digests.parquet")
    assert (
        ndjson._kept_lines(
            kept, ndjson.run_digests(*(pl.read_parquet(warehouse / f"{t}.parquet") for t in ("runs", "measurements")), "v")
        ).count(None)
        == 1
    )
    counts, _, kept_sha256 = ndjson.write_ndjson_digested(warehouse, tmp_path / "kept", kept, code="v")
    assert counts == whole and kept_sha256 == whole_sha256 and whole["runs.ndjson"] == 3
    for name in ("runs.ndjson", "protocols.ndjson", "environments.ndjson"):
        assert (tmp_path / "kept" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    # The kept file changed in place: nothing of it is taken.
    first = tmp_path / "first" / "runs.ndjson"
    first.write_bytes(first.read_bytes().replace(b"rms_norm", b"RMS_NORM"))
    runs, measurements = (pl.read_parquet(warehouse / f"{t}.parquet") for t in ("runs", "measurements"))
    assert ndjson._kept_lines(kept, ndjson.run_digests(runs, measurements, "v")) == [None] * 3
