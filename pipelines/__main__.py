"""`python -m pipelines COMMAND`: the warehouse from the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from pipelines.cli import cli_errors
from pipelines.cli.cli_exports import add_export_parser
from pipelines.cli.cli_output import GuardedStream, StandardOutputError
from pipelines.cli.cli_queries import add_compare_parser, add_sql_parser
from pipelines.cli.cli_report import add_report_parser
from pipelines.cli.cli_verdict import add_verdict_parser
from pipelines.core import instance, settings
from pipelines.core.errors import UserError
from pipelines.core.layout import Layout

VERBOSE_HELP = "on an error, also print its stack (before the one line that says what to do)"


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors on one line (the usage itself is one `--help` away)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _project_instance(current: settings.Settings) -> Path:
    """DAGSTER_HOME, or the project's instance when it is unset, claimed for this warehouse. The process stays in the
    user's folder: the instance is opened with its storage paths taken from its home (orchestration/instance_home)."""
    value = os.environ.get("DAGSTER_HOME", "").strip()
    home = Path(value) if value else instance.ensure_home(instance.default_home(current))
    if not home.is_dir():
        raise settings.SettingError(
            f"DAGSTER_HOME={str(home)!r} is not a folder: create it (a dagster.yaml there is the instance's), "
            "or unset DAGSTER_HOME for the project's instance"
        )
    instance.claim(home, current.warehouse_dir)
    return home


def materialize(args: argparse.Namespace) -> int:
    """Materialize every asset in-process with the project's Dagster instance."""
    home = _project_instance(args.settings)  # before Dagster's import: a wrong DAGSTER_HOME is said at once
    from pipelines.defs.resources import built_from
    from pipelines.orchestration.materialize import materialize_all

    return materialize_all(home, built_from(args.settings, os.environ), verbose=args.verbose)


def show_run(args: argparse.Namespace) -> int:
    from pipelines.exports.ndjson import show_run as find

    warehouse = args.settings.warehouse_dir
    if not Layout(warehouse).table("runs").is_file():
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
    # Before the command or after it: `python -m pipelines --verbose CMD` and `python -m pipelines CMD --verbose`.
    parser.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    for command in commands.choices.values():
        command.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; the errors a user can act on end it with one line on stderr (the stack only with
    --verbose), never a traceback; an interrupt (Ctrl-C) ends it with one line and exit code 130."""
    args = build_parser().parse_args(argv)
    stdout = sys.stdout
    sys.stdout = GuardedStream(stdout)
    try:
        _check_arguments(args)
        # The one read of the settings: a setting that cannot be used is refused before any command starts, and each
        # command takes what it needs from `args.settings`.
        args.settings = settings.read(os.environ)
        code = args.func(args)
        sys.stdout.flush()  # here, not at exit, so a failing stdout is reported like any other
        return code
    except StandardOutputError as exc:
        _discard_stdout(stdout)
        if isinstance(exc.cause, BrokenPipeError):
            return 1  # the reader went away (`| head`): stop quietly, as Unix tools do
        print(f"cannot write to standard output: {exc}", file=sys.stderr)
        return 1
    except (Exception, KeyboardInterrupt) as exc:
        reported = cli_errors.outcome(exc, _warehouse(args))
        if reported is None:
            raise  # not an error a user caused: its traceback is the report
        if args.verbose:
            traceback.print_exception(exc)
        code, line = reported
        print(line, file=sys.stderr)
        return code
    finally:
        sys.stdout = stdout


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuse an argument whose bytes are not UTF-8 (the shell passes any): a query or name could not hold it."""
    for name, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and (error := cli_errors.not_utf8(f"the argument {name.replace('_', '-')}", item)):
                raise error


def _warehouse(args: argparse.Namespace) -> Path | None:
    """The warehouse the command reads, to name a damaged table in it (None when the settings cannot say)."""
    if getattr(args, "warehouse_dir", None):
        return Path(args.warehouse_dir)
    current = getattr(args, "settings", None)  # absent when reading the settings was what failed
    return current.warehouse_dir if current is not None else None


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
