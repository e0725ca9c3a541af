"""The `export-liger-csv` and `export-bmf` subcommands: take the data where people already work.

Wire them into an argparse CLI with `add_export_parser(subparsers)`; each
subcommand sets `func`, which takes the parsed Namespace and returns an exit code;
errors are raised, for `python -m pipelines` to report in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipelines.cli.cli_output import check_output_folder, refuse_special_file, replace_keeping_mode, write_file, writing
from pipelines.core.errors import UserError
from pipelines.core.layout import BMF_EXPORT, Layout
from pipelines.exports import bmf, liger_csv


def export_liger_csv(args: argparse.Namespace) -> int:
    warehouse = args.settings.warehouse_dir
    if args.out != "-":
        refuse_special_file(Path(args.out))  # before the work, not after it
    snapshot = liger_csv.resolve_snapshot(warehouse, args.snapshot, args.file)
    data = liger_csv.rebuild(warehouse, snapshot)
    if args.out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        write_file(Path(args.out), data)
        print(f"{snapshot.snapshot_id}: {snapshot.row_count} rows -> {args.out}", file=sys.stderr)
    return 0


def export_bmf(args: argparse.Namespace) -> int:
    warehouse = args.settings.warehouse_dir
    if not Layout(warehouse).table("runs").exists():
        raise UserError(f"no runs table in {warehouse}: run `python -m pipelines materialize` first")
    out = Path(args.out) if args.out else Layout(warehouse).export(BMF_EXPORT)
    # write_bmf replaces the folder's .json files, and removes those of GPUs no longer present.
    check_output_folder(out, "*.json")
    with writing(out):
        written = bmf.write_bmf(warehouse, out, write=replace_keeping_mode)
    for name, count in written.items():
        print(f"{out / name}: {count} benchmarks")
    return 0


def add_export_parser(subparsers: argparse._SubParsersAction) -> None:
    csv_parser = subparsers.add_parser(
        "export-liger-csv",
        help="rebuild one upstream snapshot as a Liger CSV from the warehouse tables",
        description="Rebuild a snapshot's CSV from runs, measurements, run_snapshots and quarantine: "
        "the same header and rows, in the same order, as upstream's file.",
    )
    csv_parser.add_argument("--snapshot", required=True, help=f"a snapshot_id, or {liger_csv.LATEST!r}")
    csv_parser.add_argument("--file", help="with --snapshot latest: which file (e.g. all_benchmark_data.csv)")
    csv_parser.add_argument(
        "--out",
        default="-",
        help="the file to write (default: standard output); an existing regular file is replaced and keeps its "
        "permissions; a read-only file, or anything else (a folder, a symbolic link, a device), is refused",
    )
    csv_parser.set_defaults(func=export_liger_csv)

    bmf_parser = subparsers.add_parser(
        "export-bmf",
        help="write one Bencher Metric Format file per GPU",
        description="Write the latest passed runs as Bencher Metric Format JSON, one file per GPU (testbed).",
    )
    bmf_parser.add_argument(
        "--out",
        help="a folder (default: WAREHOUSE_DIR/exports/bmf); its .json files are replaced (keeping their permissions) and those of "
        "GPUs no longer present removed; a read-only one is refused",
    )
    bmf_parser.set_defaults(func=export_bmf)
