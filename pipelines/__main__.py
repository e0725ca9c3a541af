"""`python -m pipelines COMMAND`: the warehouse from the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import duckdb

from pipelines.cli.cli_exports import add_export_parser
from pipelines.cli.cli_output import GuardedStream, StandardOutputError, UsageError, UserError
from pipelines.cli.cli_queries import add_compare_parser, add_sql_parser
from pipelines.cli.cli_report import add_report_parser
from pipelines.cli.cli_verdict import add_verdict_parser
from pipelines.core import instance, settings
from pipelines.duck import db
from pipelines.exports import liger_csv

# Errors a user can act on, each shown as its one-line message: usage errors exit 2, the others 1.
USAGE_ERRORS: tuple[type[Exception], ...] = (UsageError, db.NoStatement)
FAILURES: tuple[type[Exception], ...] = (UserError, db.WarehouseMissing, liger_csv.ExportError, duckdb.Error, instance.InstanceTaken)


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors on one line (the usage itself is one `--help` away)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _use_project_instance() -> None:
    # DAGSTER_HOME's dagster.yaml holds the instance; relative storage paths are taken from there.
    if not os.environ.get("DAGSTER_HOME"):
        os.environ["DAGSTER_HOME"] = str(instance.ensure_home(instance.default_home()))
    settings.use_absolute_paths()  # relative settings mean what they meant in the user's folder, not DAGSTER_HOME
    instance.claim(Path(os.environ["DAGSTER_HOME"]), settings.read().warehouse_dir)
    os.chdir(os.environ["DAGSTER_HOME"])


def materialize(args: argparse.Namespace) -> int:
    """Materialize every asset in-process with the project's Dagster instance."""
    from pipelines.orchestration.materialize import materialize_all

    _use_project_instance()
    return materialize_all()


def show_run(args: argparse.Namespace) -> int:
    from pipelines.exports.ndjson import show_run as find

    warehouse = settings.read().warehouse_dir
    if not (warehouse / "runs.parquet").is_file():
        raise UserError(f"no runs table in {warehouse}: run `python -m pipelines materialize` first")
    document = find(warehouse, args.run_id)
    if document is None:
        print(f"no run {args.run_id!r} in {warehouse}", file=sys.stderr)
        return 1
    print(json.dumps(document, indent=2, ensure_ascii=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m pipelines", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("materialize", help="ingest the source and compute everything").set_defaults(func=materialize)
    show = commands.add_parser("show-run", help="print one run with its protocol and environment")
    show.add_argument("run_id")
    show.set_defaults(func=show_run)
    add_sql_parser(commands)
    add_compare_parser(commands)
    add_export_parser(commands)
    add_report_parser(commands)
    add_verdict_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; the errors a user can act on end it with one line on stderr, never a traceback."""
    args = build_parser().parse_args(argv)
    stdout = sys.stdout
    sys.stdout = GuardedStream(stdout)
    try:
        code = args.func(args)
        sys.stdout.flush()  # here, not at exit, so a failing stdout is reported like any other
        return code
    except StandardOutputError as exc:
        _discard_stdout(stdout)
        if isinstance(exc.cause, BrokenPipeError):
            return 1  # the reader went away (`| head`): stop quietly, as Unix tools do
        print(f"cannot write to standard output: {exc}", file=sys.stderr)
        return 1
    except USAGE_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FAILURES as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a file or folder the command could not read or write, named by the error
        print(f"error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""), file=sys.stderr)
        return 1
    finally:
        sys.stdout = stdout


def _discard_stdout(stdout) -> None:
    """Point standard output at /dev/null, so the interpreter's flush at exit does not fail a second time."""
    try:
        fd = stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's capture): nothing is flushed at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
