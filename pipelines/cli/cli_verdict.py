"""The `verdict` subcommand: is a contender CSV (a branch's own benchmark run) slower than the warehouse's history,
or, with `--baseline`, than one or more baseline CSVs of the same machine (branch against main)?

Wire it into an argparse CLI with `add_verdict_parser(subparsers)`; it sets `func`, which takes the parsed
Namespace and returns the exit code: 0 judged and no kernel slower, 1 some kernel slower, 3 nothing could be
judged (every kernel `no baseline` or `inconclusive`). Anything that prevents a verdict (no such file, not a
Liger CSV, no run on `--gpu`, no warehouse to judge against) is a UsageError (exit 2), so a script can tell
"slower" from "could not tell". The first line of the output says which.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb

from pipelines.cli.cli_output import UsageError
from pipelines.core import settings
from pipelines.core.layout import DATABASE, Layout
from pipelines.statistics import db
from pipelines.verdict.against_history import judge_contender
from pipelines.verdict.contender import BadContender
from pipelines.verdict.judge import MIN_EFFECT
from pipelines.verdict.pairwise import judge_pair
from pipelines.verdict.render import RENDERERS

EPILOG = (
    "exit codes: 0 judged and no kernel slower; 1 some kernel slower; 2 bad input (no such file, not a Liger CSV, "
    "no warehouse); 3 nothing could be judged (every kernel `no baseline` or `inconclusive`). The first line says which."
)


def _effect(text: str) -> float:
    """`--min-effect`: a fraction (0.05) or a percentage (5%)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is no number: give a fraction such as 0.05 or a percentage such as 5%") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range: give a fraction from 0 to 1, such as 0.05")
    return value


def add_verdict_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "verdict",
        help="judge your own benchmark CSV against the warehouse's history or a baseline CSV (exit 1 when a kernel is slower)",
        description=(
            "Judge a contender CSV (upstream's columns, e.g. your branch's benchmark/data/all_benchmark_data.csv) "
            "against each series' recent runs on the same GPU in the warehouse, or with --baseline against your own "
            "run(s) of main on the same machine; nothing is written."
        ),
        epilog=EPILOG,
    )
    parser.add_argument("csv", help="the contender CSV")
    parser.add_argument("--format", "-f", choices=sorted(RENDERERS), default="text", help="output format (default: text)")
    parser.add_argument("--gpu", help="judge only the contender's runs on this GPU (a filter: runs are never judged across GPUs)")
    parser.add_argument(
        "--baseline",
        action="append",
        metavar="BASE.csv",
        help="a baseline CSV of the same machine (e.g. main's run); repeat it for several runs, whose spread is part of the noise",
    )
    parser.add_argument(
        "--backend",
        help="the backend the files were built for (default: from the file name: a `_cutile` or `_cutedsl` suffix, else triton)",
    )
    parser.add_argument(
        "--min-effect",
        type=_effect,
        default=MIN_EFFECT,
        metavar="FRACTION",
        help=f"the smallest change called slower or faster (default: {MIN_EFFECT:g}, i.e. {MIN_EFFECT * 100:g}%%)",
    )
    parser.add_argument(
        "--warehouse-dir",
        help=f"the warehouse folder holding {DATABASE} (default: WAREHOUSE_DIR, else data/warehouse); optional with --baseline",
    )
    parser.set_defaults(func=run_verdict)
    return parser


def run_verdict(args: argparse.Namespace) -> int:
    warehouse = Path(args.warehouse_dir) if args.warehouse_dir else settings.read().warehouse_dir
    if args.backend is not None and not args.backend.strip():
        raise UsageError("--backend is empty: give a backend name such as triton, cutile or cutedsl")
    try:
        if args.baseline:
            verdict = judge_pair(
                Path(args.csv),
                [Path(b) for b in args.baseline],
                gpu=args.gpu,
                backend=args.backend,
                min_effect=args.min_effect,
                warehouse_dir=warehouse,
            )
        else:
            verdict = judge_contender(warehouse, Path(args.csv), gpu=args.gpu, backend=args.backend, min_effect=args.min_effect)
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
