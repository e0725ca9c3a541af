"""The run columns that depend only on a distinct value, joined back to the runs (RUNS) after deduplication."""

from __future__ import annotations

import hashlib

import polars as pl

from pipelines.core.canonical import NAME_MAX_CHARS
from pipelines.ingest.normalize.distinct_cache import DistinctCache, split_kernel_names

# What `describe` takes from each snapshot: its source, file, stream and backend for the runs first seen in it, its
# CI folder's benchmarked commit and release for the runs whose CI snapshot (run_identity's ci_snapshot) it is.
SOURCES = pl.Schema(
    {
        "snapshot_id": pl.String,
        "source": pl.String,
        "source_file": pl.String,
        "stream": pl.String,
        "backend": pl.String,
        "benchmarked_commit": pl.String,
        "release": pl.String,
    }
)


def _group_json() -> pl.Expr:
    """The canonical JSON that `group_id` hashes, built per row: keys in sorted order, the digests
    bare hex (nothing to escape) and the kernel already canonical JSON."""
    return pl.concat_str(
        pl.lit('{"environmentDigest":"'),
        pl.col("environment_digest"),
        pl.lit('","kernel":'),
        pl.col("_kernel_json"),
        pl.lit(',"protocolDigest":"'),
        pl.col("protocol_digest"),
        pl.lit('","workloadDigest":"'),
        pl.col("workload_digest"),
        pl.lit('"}'),
    )


def sha256_hex(texts: pl.Series) -> pl.Series:
    """The sha256 of each text, hashed once per distinct text."""
    distinct = texts.unique()
    hashes = [hashlib.sha256(text.encode()).hexdigest() for text in distinct.to_list()]
    return texts.replace_strict(distinct, pl.Series(hashes, dtype=pl.String), return_dtype=pl.String)


def describe(runs: pl.DataFrame, cache: DistinctCache, sources: pl.DataFrame) -> pl.DataFrame:
    """Run rows (RUN_ROWS and more) with the columns of RUNS that staging leaves out: those that depend only
    on a distinct value (config, GPU, benchmark, implementation, group, snapshot), joined back once the
    rows are down to their runs, so they are never written, read back and sorted with every staged row.

    `sources` holds, per snapshot_id, its source, source_file, stream and backend (taken from the run's first
    snapshot) and its CI folder's benchmarked_commit and release (taken from the run's ci_snapshot: its first CI snapshot naming a release, else its first)."""
    frame = cache.workloads.attach(split_kernel_names(runs, "raw_kernel").rename({"raw_config": "extra_benchmark_config_str"}))
    frame = frame.rename({"extra_benchmark_config_str": "raw_config"})
    frame = cache.environments.attach(frame)
    frame = cache.benchmarks.attach(frame)
    frame = cache.implementations.attach(frame)
    ci_folders = ["benchmarked_commit", "release"]
    frame = frame.join(sources.drop(ci_folders), on="snapshot_id", how="left", maintain_order="left")
    frame = frame.join(
        sources.select(pl.col("snapshot_id").alias("ci_snapshot"), *ci_folders), on="ci_snapshot", how="left", maintain_order="left"
    )
    return frame.with_columns(
        sha256_hex(frame.select(_group_json()).to_series()).alias("group_id"),
        # slug("liger {benchmark} {provider} {gpu} {workload slug}") is the slugs of its parts joined by
        # `-` (a separator run becomes one `-`, and slugs have none at their ends), empty parts left out.
        pl.concat_str(
            "_name_prefix",
            *[pl.when(pl.col(c) != "").then(pl.col(c)) for c in ("_gpu_slug", "_workload_name")],
            separator="-",
            ignore_nulls=True,
        )
        .str.slice(0, NAME_MAX_CHARS)
        .str.strip_chars_end("-")
        .alias("name"),
    )
