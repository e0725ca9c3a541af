"""`python -m pipelines COMMAND`: the warehouse from the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys

from pipelines.lib import settings
from pipelines.lib.cli_exports import add_export_parser
from pipelines.lib.cli_queries import add_compare_parser, add_sql_parser
from pipelines.lib.cli_report import add_report_parser


def _use_project_instance() -> None:
    # dagster.yaml at the project root holds the instance; relative storage paths are taken from there.
    os.environ.setdefault("DAGSTER_HOME", str(settings.PROJECT_ROOT))
    settings.use_absolute_source()  # a relative LIGER_SOURCE means the user's folder, not DAGSTER_HOME
    os.chdir(os.environ["DAGSTER_HOME"])


def materialize(args: argparse.Namespace) -> int:
    """Materialize every asset in-process with the project's Dagster instance."""
    from pipelines.lib.materialize import materialize_all

    _use_project_instance()
    return materialize_all()


def show_run(args: argparse.Namespace) -> int:
    from pipelines.lib.resources_export import show_run as find

    document = find(settings.warehouse_dir(), args.run_id)
    if document is None:
        print(f"no run {args.run_id!r} in {settings.warehouse_dir()}", file=sys.stderr)
        return 1
    print(json.dumps(document, indent=2, ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("materialize", help="ingest the source and compute everything").set_defaults(func=materialize)
    show = commands.add_parser("show-run", help="print one run with its protocol and environment")
    show.add_argument("run_id")
    show.set_defaults(func=show_run)
    add_sql_parser(commands)
    add_compare_parser(commands)
    add_export_parser(commands)
    add_report_parser(commands)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
