"""Column schemas of every table (SPEC section 4), one pl.Schema per table."""

from __future__ import annotations

import polars as pl

UTC_TIME = pl.Datetime("us", "UTC")

# The columns of the upstream CSV, in upstream's order.
LIGER_COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)
# A row with one of these empty is still a record; one with any other column empty is quarantined.
OPTIONAL_VALUES = ("x_label", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str", "liger_version")
REQUIRED_VALUES = tuple(c for c in LIGER_COLUMNS if c not in OPTIONAL_VALUES)
# A file whose header lacks one of these is not a Liger CSV (or has drifted too far to read).
REQUIRED_COLUMNS = tuple(c for c in LIGER_COLUMNS if c not in ("x_label", "liger_version"))

# Where `runs` keeps each CSV field's text exactly as written (the normalizer's renames; the Liger CSV
# export and the tests read the same map back).
AS_WRITTEN = {
    "kernel_name": "raw_kernel",
    "kernel_provider": "provider",
    "kernel_operation_mode": "pass",
    "metric_name": "metric",
    "metric_unit": "raw_unit",
    "x_name": "x_name",
    "x_label": "x_label",
    "x_value": "x_value",
    "y_value_50": "raw_y_value_50",
    "y_value_20": "raw_y_value_20",
    "y_value_80": "raw_y_value_80",
    "extra_benchmark_config_str": "raw_config",
    "gpu_name": "gpu_name",
    "timestamp": "raw_timestamp",
    "liger_version": "liger_version",
}

RUNS = pl.Schema(
    {
        "run_id": pl.String,
        "name": pl.String,
        "title": pl.String,
        "benchmark": pl.String,
        # A parameter the kernel name carried (`dyt_beta=False`) is in the workload; the name as written in raw_kernel.
        "kernel": pl.String,
        "raw_kernel": pl.String,
        "kernel_title": pl.String,
        "provider": pl.String,
        "pass": pl.String,
        "metric": pl.String,
        "status": pl.String,
        "observed_at": UTC_TIME,
        "liger_version": pl.String,
        "gpu_name": pl.String,
        "x_name": pl.String,
        "x_label": pl.String,
        "x_value": pl.String,
        "workload": pl.String,
        "workload_slug": pl.String,
        "workload_digest": pl.String,
        # The workload key of the x axis, and the workload without it: the runs of one sweep.
        "x_key": pl.String,
        "sweep_workload": pl.String,
        "sweep_digest": pl.String,
        "protocol_digest": pl.String,
        "environment_digest": pl.String,
        "implementation_digest": pl.String,
        "group_id": pl.String,
        # Median, p20 and p80 in the canonical unit: whole ns or bytes for speed and
        # memory (exact in a double), the raw number for a metric we do not know.
        "value": pl.Float64,
        "p20": pl.Float64,
        "p80": pl.Float64,
        "unit": pl.String,
        "raw_unit": pl.String,
        "raw_p20": pl.Float64,
        "raw_p50": pl.Float64,
        "raw_p80": pl.Float64,
        # The y fields verbatim, so a snapshot can be rebuilt byte for byte.
        "raw_y_value_50": pl.String,
        "raw_y_value_20": pl.String,
        "raw_y_value_80": pl.String,
        "raw_timestamp": pl.String,
        "source": pl.String,
        "source_file": pl.String,
        "first_seen_snapshot": pl.String,
        "last_seen_snapshot": pl.String,
        "in_latest": pl.Boolean,
        "raw_config": pl.String,
        # Values of columns upstream added beyond the known ones, as a JSON object.
        "extra_columns": pl.String,
        # The backend its file was written for (SPEC section 4): an implementation is (provider, backend).
        "backend": pl.String,
        # The stream of its first snapshot (`data`, `ci`, `file`); the CI folder that carried it, if one did.
        "stream": pl.String,
        "benchmarked_commit": pl.String,
        "release": pl.String,
        # Seen in a snapshot still on its branch (false: only history that a force-push removed holds it).
        "on_branch": pl.Boolean,
    }
)

MEASUREMENTS = pl.Schema(
    {
        "run_id": pl.String,
        "metric": pl.String,
        "statistic": pl.String,
        "value": pl.Float64,
        "unit": pl.String,
        "raw_value": pl.Float64,
        "raw_unit": pl.String,
    }
)

ENVIRONMENTS = pl.Schema(
    {
        "environment_digest": pl.String,
        "name": pl.String,
        "title": pl.String,
        "gpu_name": pl.String,
        "vendor": pl.String,
        "product": pl.String,
        "form_factor": pl.String,
        "architecture": pl.String,
        "known": pl.Boolean,
        "spec": pl.String,
    }
)

PROTOCOLS = pl.Schema(
    {
        "protocol_digest": pl.String,
        "name": pl.String,
        "title": pl.String,
        "metric": pl.String,
        "pass": pl.String,
        "spec": pl.String,
    }
)

SNAPSHOTS = pl.Schema(
    {
        "snapshot_id": pl.String,
        "source": pl.String,
        "source_file": pl.String,
        "commit": pl.String,
        "committed_at": UTC_TIME,
        "subject": pl.String,
        "sequence": pl.Int64,
        "content_sha256": pl.String,
        "status": pl.String,  # ingested | rejected
        "reason": pl.String,
        "header": pl.String,  # the file's column names, as a JSON list
        "row_count": pl.Int64,
        "accepted": pl.Int64,
        "quarantined": pl.Int64,
        "is_latest": pl.Boolean,
        # How the file lays its records out, so that it rebuilds byte for byte (see parse_layout.Layout).
        "bom": pl.Boolean,
        "line_end": pl.String,  # `\r\n` (as upstream's csv writer writes) or `\n`
        "final_newline": pl.Boolean,
        "layout": pl.String,  # JSON: separators and record texts other than the writer's, why not exact; null if none
        "stream": pl.String,  # data | ci | file (SPEC section 7)
        "benchmarked_commit": pl.String,  # from a CI folder's name
        "release": pl.String,
        "on_branch": pl.Boolean,  # still reachable from its branch (SPEC section 1)
        # A CI snapshot's benchmarked commit in the data stream's branch (`main`) where it holds it: the commit
        # there, its first-parent position (1: the root) and its commit time; null elsewhere (the view commit_places).
        "main_commit": pl.String,
        "main_position": pl.Int64,
        "main_committed_at": UTC_TIME,
    }
)

RUN_SNAPSHOTS = pl.Schema({"run_id": pl.String, "snapshot_id": pl.String, "row_number": pl.Int64})

QUARANTINE = pl.Schema({"snapshot_id": pl.String, "row_number": pl.Int64, "raw": pl.String, "reason": pl.String})

TABLES: dict[str, pl.Schema] = {
    "runs": RUNS,
    "measurements": MEASUREMENTS,
    "environments": ENVIRONMENTS,
    "protocols": PROTOCOLS,
    "snapshots": SNAPSHOTS,
    "run_snapshots": RUN_SNAPSHOTS,
    "quarantine": QUARANTINE,
}

# The columns of RUNS that depend only on a distinct value (config, GPU, benchmark, implementation, group,
# snapshot) or on the history: staged rows leave them out; they are joined back to the deduplicated runs.
RUN_ROWS_LEFT_OUT = (
    "name",
    "title",
    "benchmark",
    "kernel_title",
    "workload",
    "workload_slug",
    "workload_digest",
    "x_key",
    "sweep_workload",
    "sweep_digest",
    "protocol_digest",
    "environment_digest",
    "implementation_digest",
    "group_id",
    "source",
    "source_file",
    "first_seen_snapshot",
    "last_seen_snapshot",
    "in_latest",
    "backend",
    "stream",
    "benchmarked_commit",
    "release",
    "on_branch",
)
# What the normalizer stages for each accepted row, before runs are deduplicated.
RUN_ROWS = pl.Schema(
    {
        **{k: v for k, v in RUNS.items() if k not in RUN_ROWS_LEFT_OUT},
        "snapshot_id": pl.String,
        "row_number": pl.Int64,
    }
)
