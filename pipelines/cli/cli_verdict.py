"""The `verdict` subcommand: is a contender CSV (a branch's own benchmark run) slower than the warehouse's history?

Wire it into an argparse CLI with `add_verdict_parser(subparsers)`; it sets `func`, which takes the parsed
Namespace and returns the exit code: 1 when a kernel is slower, 0 when none is. Anything that prevents a
verdict (no such file, not a Liger CSV, no run on `--gpu`, no warehouse to judge against) is a UsageError
(exit 2), so a script can tell "slower" from "could not tell".
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb

from pipelines.cli.cli_output import UsageError
from pipelines.core import settings
from pipelines.core.layout import DATABASE, Layout
from pipelines.duck import db
from pipelines.verdict.contender import BadContender
from pipelines.verdict.render import RENDERERS
from pipelines.verdict.verdict import judge_contender


def add_verdict_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "verdict",
        help="judge your own benchmark CSV against the warehouse's history (exit 1 when a kernel is slower)",
        description=(
            "Judge a contender CSV (upstream's columns, e.g. your branch's benchmark/data/all_benchmark_data.csv) "
            "against each series' latest runs on the same GPU, with the series' noise; nothing is written. "
            "Exit 1 when any kernel is slower, 0 when none is, 2 when it cannot be judged."
        ),
    )
    parser.add_argument("csv", help="the contender CSV")
    parser.add_argument("--format", "-f", choices=sorted(RENDERERS), default="text", help="output format (default: text)")
    parser.add_argument("--gpu", help="judge only the contender's runs on this GPU (a filter: runs are never judged across GPUs)")
    parser.add_argument("--backend", help="the backend the contender was built for (default: from its file name; benchmark.csv is triton)")
    parser.add_argument("--warehouse-dir", help=f"the warehouse folder holding {DATABASE} (default: WAREHOUSE_DIR, else data/warehouse)")
    parser.set_defaults(func=run_verdict)
    return parser


def run_verdict(args: argparse.Namespace) -> int:
    warehouse = Path(args.warehouse_dir) if args.warehouse_dir else settings.read().warehouse_dir
    if args.backend is not None and not args.backend.strip():
        raise UsageError("--backend is empty: give a backend name such as triton, cutile or cutedsl")
    try:
        verdict = judge_contender(warehouse, Path(args.csv), gpu=args.gpu, backend=args.backend)
    except BadContender as exc:
        raise UsageError(str(exc)) from None
    except db.WarehouseMissing as exc:
        raise UsageError(f"{exc}; nothing to judge against: run `python -m pipelines materialize`, or set WAREHOUSE_DIR") from None
    except duckdb.Error as exc:  # a file of an older warehouse (no runs.backend) or a damaged one: no verdict, not "slower"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        path = Layout(warehouse).database
        raise UsageError(f"cannot judge against {path}: {first}; rebuild it with `python -m pipelines materialize`") from None
    print(RENDERERS[args.format](verdict))
    return verdict.exit_code
