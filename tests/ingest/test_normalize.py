"""Normalization of rows into runs, measurements and quarantine (SPEC sections 2, 4 and 5),
on small CSVs written here and staged as snapshots."""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from conftest import HEADER, liger_csv, liger_row

from pipelines.assemble import assembly as tables
from pipelines.core.canonical import digest
from pipelines.ingest import staging
from pipelines.ingest.normalize.distinct_cache import DistinctCache
from pipelines.ingest.source.listing import SnapshotRef


def ingest_texts(warehouse: Path, versions: list[tuple[str, str]], file_name: str = "data.csv") -> dict[str, pl.DataFrame]:
    """Stage each (commit, csv text) as a snapshot of one file, oldest first, then assemble."""
    cache = DistinctCache()
    for sequence, (commit, text) in enumerate(versions, 1):
        ref = SnapshotRef(
            f"{commit}/{file_name}",
            "test",
            f"benchmark/data/{file_name}",
            commit,
            datetime(2025, 1, sequence, tzinfo=UTC),
            "subject",
            sequence,
        )
        staging.stage_snapshot(warehouse, ref, lambda _ref, t=text: t.encode(), cache, ingest_seq=1)
    return tables.assemble(warehouse, None)


def one(warehouse: Path, *rows: str) -> dict[str, pl.DataFrame]:
    return ingest_texts(warehouse, [("c1", liger_csv(*rows))])


def test_speed_run_in_nanoseconds_with_raw_numbers_kept(tmp_path):
    t = one(tmp_path, liger_row(y50="0.5324159860610962", y20="0.5291008353233337", y80="0.53476482629776"))
    run = t["runs"].row(0, named=True)
    assert (run["value"], run["p20"], run["p80"], run["unit"]) == (532416.0, 529101.0, 534765.0, "ns")
    assert run["raw_p50"] == 0.5324159860610962 and run["raw_unit"] == "ms"
    m = t["measurements"].sort("statistic")
    assert m["statistic"].to_list() == ["p20", "p50", "p80"]
    assert m["metric"].unique().to_list() == ["latency"]
    assert m["value"].to_list() == [529101.0, 532416.0, 534765.0]
    assert m["raw_value"].to_list() == [0.5291008353233337, 0.5324159860610962, 0.53476482629776]


def test_memory_run_in_bytes_from_mib(tmp_path):
    t = one(tmp_path, liger_row(metric="memory", unit="MB", y50="1.5", y20="1.25", y80="2"))
    run = t["runs"].row(0, named=True)
    assert (run["value"], run["p20"], run["p80"], run["unit"]) == (1.5 * 2**20, 1.25 * 2**20, 2 * 2**20, "bytes")
    assert run["benchmark"] == "rms_norm/forward/memory"
    assert run["title"] == "RMSNorm · liger · forward · peak memory"
    assert set(t["measurements"]["metric"]) == {"peak_memory"}


def test_unknown_metric_keeps_raw_value_and_unit(tmp_path):
    t = one(tmp_path, liger_row(metric="throughput", unit="tokens/s", y50="123.5", y20="120", y80="130"))
    run = t["runs"].row(0, named=True)
    assert (run["value"], run["unit"], run["metric"]) == (123.5, "tokens/s", "throughput")
    assert set(t["measurements"]["metric"]) == {"throughput"}
    assert t["protocols"]["name"].to_list() == ["liger-bench-throughput-forward"]


@pytest.mark.parametrize("missing", ["nan", "", "NaN"])
def test_missing_median_is_a_failed_run_without_measurements(tmp_path, missing):
    t = one(tmp_path, liger_row(y50=missing, y20=missing, y80=missing))
    run = t["runs"].row(0, named=True)
    assert run["status"] == "failed" and run["value"] is None and run["raw_p50"] is None
    assert run["raw_y_value_50"] == missing
    assert t["measurements"].is_empty()
    assert t["quarantine"].is_empty()


def test_quarantine_reasons(tmp_path):
    rows = [
        liger_row(config="[1, 2]"),
        liger_row(config="{not json"),
        liger_row(kernel="", x_value="2048"),
        liger_row(y20="fast", x_value="4096"),
        liger_row(y80="inf", x_value="8192"),
        liger_row(timestamp="14/11/2024 16:56", x_value="16384"),
        liger_row(x_value="32768"),
    ]
    t = one(tmp_path, *rows)
    reasons = t["quarantine"].sort("row_number")["reason"].to_list()
    assert "JSON list, not an object" in reasons[0]
    assert "not valid JSON" in reasons[1]
    assert reasons[2] == "required field(s) empty: kernel_name"
    assert reasons[3] == "y_value_20 fast is neither a number nor missing"
    assert reasons[4] == "y_value_80 inf is neither a number nor missing"
    assert reasons[5] == "timestamp 14/11/2024 16:56 is not in the form YYYY-MM-DD HH:MM:SS"
    assert t["quarantine"]["row_number"].to_list() == [1, 2, 3, 4, 5, 6]
    assert t["quarantine"]["raw"][3] == rows[3]
    assert t["runs"].height == 1
    snap = t["snapshots"].row(0, named=True)
    assert (snap["row_count"], snap["accepted"], snap["quarantined"]) == (7, 1, 6)


def test_wrong_field_count_is_quarantined_with_its_text(tmp_path):
    text = HEADER + "\n" + liger_row() + "\nrms_norm,liger,forward\n" + liger_row(x_value="2048") + "\n"
    t = ingest_texts(tmp_path, [("c1", text)])
    q = t["quarantine"].row(0, named=True)
    assert (q["row_number"], q["raw"]) == (2, "rms_norm,liger,forward")
    assert q["reason"] == "the row has 3 fields where the header has 15"
    assert t["run_snapshots"].sort("row_number")["row_number"].to_list() == [1, 3]


def test_header_missing_a_required_column_rejects_the_snapshot(tmp_path):
    text = HEADER.replace("gpu_name", "device") + "\n" + liger_row() + "\n"
    t = ingest_texts(tmp_path, [("c1", text)])
    snap = t["snapshots"].row(0, named=True)
    assert snap["status"] == "rejected" and "gpu_name" in snap["reason"]
    assert (snap["row_count"], snap["accepted"], snap["quarantined"]) == (1, 0, 1)
    assert t["quarantine"]["reason"][0] == snap["reason"]


def test_extra_and_reordered_columns_are_kept(tmp_path):
    columns = HEADER.split(",")
    reordered = list(reversed(columns)) + ["cuda_version"]
    values = dict(zip(columns, liger_row(config="{}").split(",")))
    line = ",".join(values.get(c, "12.4") for c in reordered)
    t = ingest_texts(tmp_path, [("c1", ",".join(reordered) + "\n" + line + "\n")])
    run = t["runs"].row(0, named=True)
    assert run["extra_columns"] == '{"cuda_version":"12.4"}'
    assert run["kernel"] == "rms_norm" and run["value"] == 500000.0


def test_a_run_seen_in_many_snapshots_is_one_run_with_provenance(tmp_path):
    old = liger_row(timestamp="2025-01-01 10:00:00")
    rerun = liger_row(timestamp="2025-02-01 10:00:00", y50="0.4")
    other = liger_row(x_value="2048")
    t = ingest_texts(tmp_path, [("c1", liger_csv(old, other)), ("c2", liger_csv(rerun, other)), ("c3", liger_csv(rerun, other))])
    runs = t["runs"].sort("observed_at", "x_value")
    assert runs.height == 3
    by_x_time = {(r["x_value"], r["raw_timestamp"]): r for r in runs.iter_rows(named=True)}
    first = by_x_time[("1024", "2025-01-01 10:00:00")]
    assert (first["first_seen_snapshot"], first["last_seen_snapshot"], first["in_latest"]) == ("c1/data.csv", "c1/data.csv", False)
    second = by_x_time[("1024", "2025-02-01 10:00:00")]
    assert (second["first_seen_snapshot"], second["last_seen_snapshot"], second["in_latest"]) == ("c2/data.csv", "c3/data.csv", True)
    shared = by_x_time[("2048", "2025-01-01 10:00:00")]
    assert (shared["first_seen_snapshot"], shared["last_seen_snapshot"], shared["in_latest"]) == ("c1/data.csv", "c3/data.csv", True)
    assert t["run_snapshots"].height == 6


def test_x_override_and_digests_make_the_group(tmp_path):
    a = liger_row(provider="liger", config='{"H": 512, "M": 8}', x_value="1024")
    b = liger_row(provider="huggingface", config='{"M": 8, "H": 4}', x_value="1024")
    t = one(tmp_path, a, b)
    runs = t["runs"]
    assert runs["workload"].unique().to_list() == ['{"M":8,"hidden":1024}']
    assert runs["group_id"].n_unique() == 1 and runs["implementation_digest"].n_unique() == 2


def test_unknown_gpu_and_kernel_get_fallbacks(tmp_path):
    t = one(tmp_path, liger_row(kernel="fancy_new_op", gpu="AMD Instinct MI300X"))
    run = t["runs"].row(0, named=True)
    assert run["kernel_title"] == "Fancy new op"
    env = t["environments"].row(0, named=True)
    assert (env["vendor"], env["product"], env["known"], env["architecture"]) == ("amd", "AMD Instinct MI300X", False, None)
    assert env["title"] == "Liger benchmark host · Instinct MI300X"


def test_a_kernel_name_with_a_parameter_is_one_kernel_and_a_workload_parameter(tmp_path):
    """Upstream's `dyt_beta=False` and `dyt_beta=True` are the kernel dyt in two workloads; the name stays as written."""
    t = one(tmp_path, liger_row(kernel="dyt_beta=False"), liger_row(kernel="dyt_beta=True"), liger_row(kernel="dyt"))
    runs = t["runs"].sort("raw_kernel")
    assert runs["kernel"].to_list() == ["dyt"] * 3 and runs["raw_kernel"].to_list() == ["dyt", "dyt_beta=False", "dyt_beta=True"]
    assert runs["kernel_title"].to_list() == ["Dynamic tanh (DyT)"] * 3 and runs["benchmark"].n_unique() == 1
    assert [w.get("beta") for w in runs["workload"].str.json_decode().to_list()] == [None, False, True]
    assert runs["group_id"].n_unique() == 3 and runs["run_id"].n_unique() == 3
    assert "betafalse" in runs["workload_slug"][1]


def test_coverage_fails_naming_a_gpu_or_kernel_the_catalogs_lack(tmp_path):
    from pipelines.assemble import checks

    write_tables(tmp_path / "known", one(tmp_path / "a", liger_row(kernel="dyt_beta=True", gpu="NVIDIA H200")))
    assert checks.catalog_coverage(tmp_path / "known").passed
    write_tables(tmp_path / "new", one(tmp_path / "b", liger_row(kernel="fancy_new_op", gpu="NVIDIA H300")))
    outcome = checks.catalog_coverage(tmp_path / "new")
    assert not outcome.passed and "NVIDIA H300" in outcome.description and "fancy_new_op" in outcome.description


def write_tables(folder: Path, assembled: dict[str, pl.DataFrame]) -> None:
    folder.mkdir(parents=True)
    for name, frame in assembled.items():
        frame.write_parquet(folder / f"{name}.parquet")


def test_run_id_name_and_group_id_as_spec_section_2_builds_them(tmp_path):
    row = liger_row(
        kernel="fused_linear_cpo_loss",
        provider="huggingface",
        mode="full",
        x_name="B",
        x_value="4",
        timestamp="2024-11-14 16:56:30",
        config='{"H": 4096, "T": 1024, "V": 128256, "dtype": "torch.bfloat16"}',
    )
    run = one(tmp_path, row)["runs"].row(0, named=True)
    assert run["run_id"] == (
        "fused_linear_cpo_loss/full/huggingface/nvidia-a100-sxm4-80gb/batch4-hidden4096-seq1024-vocab128256-bf16/2024-11-14-16-56-30"
    )
    assert run["name"] == "liger-fused-linear-cpo-loss-full-huggingface-nvidia-a100-sxm4-80gb-batch4-hidden4096-seq1024-vocab12"
    group = {
        "kernel": run["kernel"],
        "workloadDigest": run["workload_digest"],
        "protocolDigest": run["protocol_digest"],
        "environmentDigest": run["environment_digest"],
    }
    assert run["group_id"] == digest(group)


def test_a_display_name_cut_at_100_characters_drops_a_trailing_dash(tmp_path):
    # `liger-k-full-p-nvidia-a100-sxm4-80gb-` is 37 characters; 62 of the a's make the 100th the dash before the b's.
    run = one(tmp_path, liger_row(kernel="k", provider="p", mode="full", config='{"' + "a" * 61 + '": "b"}'))["runs"].row(0, named=True)
    assert run["name"].endswith("ab") and len(run["name"]) == 99
