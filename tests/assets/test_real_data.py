"""The whole real history (the bundle), ingested once: the facts of issue 2 and the seed document."""

import json

import polars as pl

from pipelines.exports.ndjson import show_run, write_ndjson

SEED_RUN_ID = "fused_linear_cpo_loss/full/huggingface/nvidia-a100-sxm4-80gb/batch4-hidden4096-seq1024-vocab128256-bf16/2024-11-14-16-56-30"
DIGEST_KEYS = ("protocolDigest", "workloadDigest", "environmentDigest", "implementationDigest")


def read(warehouse, name):
    return pl.read_parquet(warehouse / f"{name}.parquet")


def test_counts(real_warehouse):
    snapshots = read(real_warehouse, "snapshots")
    runs = read(real_warehouse, "runs")
    assert snapshots.height == 40
    assert snapshots["row_count"].sum() == 48_173
    assert runs.height == 4_421
    assert runs["in_latest"].sum() == 3_897
    assert read(real_warehouse, "quarantine").height == 0
    assert (snapshots["quarantined"] == 0).all() and (snapshots["status"] == "ingested").all()
    assert read(real_warehouse, "run_snapshots").height == 48_173
    assert runs["run_id"].n_unique() == 4_421


def test_section_5_accounting_per_snapshot(real_warehouse):
    mapped = read(real_warehouse, "run_snapshots").group_by("snapshot_id").len()
    joined = read(real_warehouse, "snapshots").join(mapped, on="snapshot_id")
    assert (joined["row_count"] == joined["accepted"] + joined["quarantined"]).all()
    assert (joined["accepted"] == joined["len"]).all()


def test_dimensions_match_the_data_readme(real_warehouse):
    runs = read(real_warehouse, "runs")
    assert runs["gpu_name"].n_unique() == 8
    assert runs["kernel"].n_unique() == 38
    assert runs["provider"].n_unique() == 19
    assert sorted(runs["pass"].unique()) == ["backward", "forward", "full", "no-grad-forward"]
    assert read(real_warehouse, "environments")["known"].all()
    assert (runs["kernel_title"] != runs["kernel"]).all()


def test_show_run_equals_the_seed_but_its_digests(real_warehouse, seed_run_path):
    expected = json.loads(seed_run_path.read_text())
    got = show_run(real_warehouse, SEED_RUN_ID)
    for key in DIGEST_KEYS:
        assert got["run"]["spec"].pop(key).startswith("sha256:")
        expected["run"]["spec"].pop(key)
    assert got == expected


def test_digests_follow_section_2(real_warehouse):
    from pipelines.core.canonical import digest

    run = read(real_warehouse, "runs").filter(pl.col("run_id") == SEED_RUN_ID).row(0, named=True)
    assert run["workload_digest"] == digest(json.loads(run["workload"]))
    assert run["implementation_digest"] == digest({"kernel": "fused_linear_cpo_loss", "provider": "huggingface", "ligerVersion": "0.4.1"})
    assert run["group_id"] == digest(
        {
            "kernel": run["kernel"],
            "workloadDigest": run["workload_digest"],
            "protocolDigest": run["protocol_digest"],
            "environmentDigest": run["environment_digest"],
        }
    )


def test_ndjson_resources(real_warehouse):
    counts = write_ndjson(real_warehouse)
    assert counts == {"runs.ndjson": 4_421, "protocols.ndjson": 7, "environments.ndjson": 8}
    lines = (real_warehouse / "exports" / "runs.ndjson").read_text().splitlines()
    seed = next(json.loads(line) for line in lines if SEED_RUN_ID in line)
    assert seed["spec"]["timing"]["latencyNs"]["median"] == 77002724
    memory = next(json.loads(line) for line in lines if '"memory"' in line)
    assert memory["spec"]["memory"]["peakBytes"]["median"] > 0
    assert {m["metric"] for m in memory["spec"]["measurements"]} == {"peak_memory"}
    assert set(memory["spec"]["sourceNative"]["metrics"]) == {"mb_20", "mb_50", "mb_80"}


def test_cpo_loss_group_shows_liger_faster_than_huggingface(real_warehouse):
    from pipelines.statistics.database_build import build_database
    from pipelines.statistics.db import query

    build_database(real_warehouse, ["huggingface", "torch"])
    rows = query(
        real_warehouse,
        """
        SELECT p.provider, p.value, p.baseline_provider, p.baseline_value, p.ratio, p.separated
        FROM provider_comparisons p JOIN comparable_groups g USING (group_id)
        WHERE g.kernel = 'fused_linear_cpo_loss' AND g.gpu_name = 'NVIDIA A100-SXM4-80GB'
          AND g.pass = 'full' AND g.metric = 'speed'
          AND g.workload_slug = 'batch4-hidden4096-seq1024-vocab128256-bf16'
        ORDER BY p.provider
        """,
    ).rows
    by_provider = {row[0]: row for row in rows}
    assert set(by_provider) == {"huggingface", "liger"}
    _, value, baseline, baseline_value, ratio, separated = by_provider["liger"]
    assert (baseline, round(baseline_value / 1e6, 4), round(value / 1e6, 4)) == ("huggingface", 77.0027, 63.0535)
    assert round(ratio, 4) == round(77.0027 / 63.0535, 4) == 1.2212
    assert separated is True
