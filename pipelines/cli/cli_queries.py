"""The `sql` and `compare` subcommands: ad hoc queries on warehouse.duckdb, read-only.

Wire them into an argparse CLI with `add_sql_parser(subparsers)` and
`add_compare_parser(subparsers)`; each sets `func`, which takes the parsed
Namespace and returns an exit code; errors are raised, for `python -m pipelines`
to report in one line.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

from pipelines.cli.cli_output import UsageError
from pipelines.core import metadata, settings, sql_files
from pipelines.core.layout import DATABASE
from pipelines.core.metadata import format_cell
from pipelines.statistics import db
from pipelines.statistics.db import Result


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# Characters that would move the cursor or end a line inside a cell (upstream's text may hold any: a CR, an escape
# sequence): the table and markdown formats print them as escapes; csv and json quote them their own way.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str) -> str:
    """`text` with every control character as an escape (`\\r`, `\\x1b`), so that a cell stays on its line."""
    return _CONTROLS.sub(lambda found: _NAMED.get(found.group(), found.group().encode("unicode_escape").decode("ascii")), text)


def format_table(result: Result, max_rows: int | None = None, right: Sequence[bool] | None = None) -> str:
    """Aligned columns with a header rule and a row count; `max_rows` caps the rows shown.

    Columns holding numbers are right-aligned, or those `right` says.
    """
    shown = result.rows if not max_rows else result.rows[:max_rows]
    cells = [[visible(format_cell(value)) for value in row] for row in shown]
    columns = [visible(name) for name in result.columns]
    widths = [max([len(name), *(len(row[i]) for row in cells)]) for i, name in enumerate(columns)]
    numeric = right or [any(_is_number(row[i]) for row in shown) for i in range(len(result.columns))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if right else v.ljust(w) for v, w, right in zip(values, widths, numeric, strict=True)).rstrip()

    lines = [line(columns), line(["-" * w for w in widths])]
    lines += [line(row) for row in cells]
    hidden = len(result.rows) - len(shown)
    more = f", {hidden} not shown: raise --max-rows or use --format csv" if hidden else ""
    footer = f"({len(result.rows)} rows{more})"
    return "\n".join([*lines, footer])


def format_markdown(result: Result) -> str:
    columns = [visible(name) for name in result.columns]
    return metadata.markdown_table(columns, result.rows, cell=lambda value: visible(format_cell(value, null="")), width=None)


def _plain(value: Any) -> Any:
    """A value JSON can hold: datetimes as ISO text, non-finite floats as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)  # Decimal, UUID, timedelta


def format_json(result: Result) -> str:
    return json.dumps([_plain(record) for record in result.records()], indent=2, ensure_ascii=False)


def format_csv(result: Result) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    for row in result.rows:
        plain = [_plain(value) for value in row]
        writer.writerow("" if v is None else json.dumps(v) if isinstance(v, list | dict) else v for v in plain)
    return out.getvalue().rstrip("\n")


FORMATS: dict[str, Callable[[Result], str]] = {
    "table": format_table,
    "csv": format_csv,
    "json": format_json,
    "markdown": format_markdown,
}


def _warehouse_dir(args: argparse.Namespace) -> Path:
    return Path(args.warehouse_dir) if args.warehouse_dir else settings.read().warehouse_dir


def _add_warehouse_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warehouse-dir",
        help=f"the warehouse folder holding {DATABASE} (default: WAREHOUSE_DIR, else data/warehouse)",
    )


def row_count(text: str) -> int:
    """A --max-rows value: a whole number, 0 or more."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"{count} is negative: give 0 for all rows, or how many to show")
    return count


def add_sql_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "sql",
        help=f"run a read-only SQL query on {DATABASE}",
        description=(
            f"Run SQL on {DATABASE}, opened read-only: it never waits for, nor blocks, a running "
            f"materialization. Tables: {', '.join(db.TABLES + db.STATISTICS)}."
        ),
    )
    parser.add_argument("query", nargs="?", default="-", help="the SQL text; '-' or nothing reads it from stdin")
    parser.add_argument("--format", "-f", choices=sorted(FORMATS), default="table", help="output format (default: table)")
    parser.add_argument("--max-rows", type=row_count, default=100, help="rows shown by --format table, 0 for all (default: 100)")
    _add_warehouse_dir(parser)
    parser.set_defaults(func=run_sql)
    return parser


def run_sql(args: argparse.Namespace) -> int:
    if args.query == "-" and sys.stdin.isatty():
        example = 'sql "SELECT * FROM kernel_scorecard"'
        print(f"error: give the SQL as an argument, e.g. {example}, or on stdin", file=sys.stderr)
        return 2
    text = read_query(sys.stdin) if args.query == "-" else args.query
    result = db.query(_warehouse_dir(args), text)
    if args.format == "table":
        print(format_table(result, max_rows=args.max_rows))
    else:
        print(FORMATS[args.format](result))
    return 0


def read_query(stream: Any) -> str:
    """The SQL text on `stream` (standard input), which must be UTF-8: its bytes, not the locale's decoding of them."""
    data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read().encode("utf-8", "surrogateescape")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"the query on standard input is not UTF-8 text (byte 0x{data[exc.start]:02x} at byte {exc.start + 1}): give it as UTF-8"
        ) from None


def add_compare_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "compare",
        help="compare implementations (provider and backend) of one kernel on one GPU, workload by workload",
        description=(
            "Per workload, each implementation's latest passed run in ms or MiB: a provider and the backend its "
            "file was written for (the cuTile file's liger and the Triton file's are two lines). Its ratio to its "
            "baseline, named in the `vs` column (above 1: better than the baseline), and whether the difference "
            "stands out of the noise."
        ),
    )
    parser.add_argument("--kernel", required=True, help="kernel name, e.g. fused_linear_cpo_loss")
    parser.add_argument("--gpu", required=True, help='GPU name as in the data, e.g. "NVIDIA A100-SXM4-80GB"')
    parser.add_argument("--pass", dest="pass_", help="full, forward, backward or no-grad-forward")
    parser.add_argument("--metric", help="speed or memory")
    parser.add_argument("--provider", dest="providers", action="append", help="keep this provider (repeatable); baselines stay")
    parser.add_argument(
        "--backend", dest="backends", action="append", help="keep this backend, e.g. triton or cutile (repeatable); baselines stay"
    )
    _add_warehouse_dir(parser)
    parser.set_defaults(func=run_compare)
    return parser


def run_compare(args: argparse.Namespace) -> int:
    warehouse_dir = _warehouse_dir(args)
    rows = compare(
        warehouse_dir, args.kernel, args.gpu, pass_=args.pass_, metric=args.metric, providers=args.providers, backends=args.backends
    )
    gpus = [] if rows else gpus_for_kernel(warehouse_dir, args.kernel)
    if not rows:
        hint = f"; GPUs with {args.kernel}: {', '.join(gpus)}" if gpus else f"; no passed runs of {args.kernel} at all"
        print(f"no comparisons match {args.kernel} on {args.gpu}{hint}", file=sys.stderr)
        return 1
    print(
        f"{args.kernel} on {args.gpu}: latest passed run per implementation (provider, backend); "
        "ratio = baseline (vs) / value, above 1 is better\n"
    )
    print(format_comparison(rows))
    return 0


COMPARISON_COLUMNS = ["provider", "backend", "value", "p20..p80", "ratio", "vs", "noise", "version", "observed (UTC)"]
COMPARISON_RIGHT = [False, False, True, True, True, False, False, False, False]


def compare(
    warehouse_dir: Path,
    kernel: str,
    gpu: str,
    pass_: str | None = None,
    metric: str | None = None,
    providers: Sequence[str] | None = None,
    backends: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Per workload, each implementation's (provider, backend) latest run in ms or MiB with its ratio to its
    baseline (`baseline_provider`, `baseline_backend`)."""
    params = {
        "kernel": kernel,
        "gpu": gpu,
        "pass": pass_,
        "metric": metric,
        "providers": list(providers) if providers else None,
        "backends": list(backends) if backends else None,
    }
    return db.query(warehouse_dir, sql_files.text("queries/compare"), params).records()


def gpus_for_kernel(warehouse_dir: Path, kernel: str) -> list[str]:
    """The GPUs with a comparison for this kernel, to suggest when compare finds nothing."""
    result = db.query(
        warehouse_dir,
        "SELECT DISTINCT gpu_name FROM provider_comparisons WHERE kernel = ? ORDER BY gpu_name",
        [kernel],
    )
    return [row[0] for row in result.rows]


def format_comparison(rows: Sequence[dict[str, Any]]) -> str:
    """Rows of `cli_queries.compare`, one block per workload with a line per implementation, best first.

    ratio is the baseline's value over this one (above 1: better than the baseline); `vs` names that
    baseline as provider/backend, so two implementations of one provider read apart and together.
    """
    blocks = []
    for (pass_, metric, slug), block in groupby(rows, key=lambda r: (r["pass"], r["metric"], r["workload_slug"])):
        block = list(block)
        first = block[0]
        title = f"{slug}  ({pass_}, {metric}; {first['x_name']} = {first['x_value']}; unit {first['unit']})"
        cells = [
            (
                row["provider"],
                row["backend"],
                _significant(row["value"]),
                f"{_significant(row['p20'])}..{_significant(row['p80'])}",
                "" if row["ratio"] is None else f"{row['ratio']:.3f}",
                _baseline(row),
                row["noise"] or "",
                row["liger_version"] or "",
                row["observed_at"].strftime("%Y-%m-%d %H:%M:%S"),
            )
            for row in block
        ]
        table = format_table(Result(columns=COMPARISON_COLUMNS, types=[], rows=cells), right=COMPARISON_RIGHT)
        body = "\n".join("  " + line for line in table.splitlines()[:-1])  # no row-count footer per block
        blocks.append(f"{title}\n{body}")
    return "\n\n".join(blocks)


def _baseline(row: dict[str, Any]) -> str:
    """The implementation a row's ratio is taken against, as provider/backend; `itself` for the baseline's own row."""
    if row["baseline_provider"] is None:
        return ""
    if (row["baseline_provider"], row["baseline_backend"]) == (row["provider"], row["backend"]):
        return "itself"
    return f"{row['baseline_provider']}/{row['baseline_backend']}"


def _significant(value: float | None) -> str:
    return "?" if value is None else f"{value:.6g}"
