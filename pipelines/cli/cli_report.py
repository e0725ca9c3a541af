"""The `report` subcommand: build the static report when it is missing or stale, print where it is.

Wire it into an argparse CLI with `add_report_parser(subparsers)`; it sets
`func`, which takes the parsed Namespace and returns an exit code; errors are
raised, for `python -m pipelines` to report in one line.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path

from pipelines.cli.cli_output import writing
from pipelines.core.layout import DATABASE, REPORT, Layout
from pipelines.exports.report import build_report_if_stale, is_stale
from pipelines.exports.report.site import INDEX
from pipelines.storage import store


def report(args: argparse.Namespace) -> int:
    warehouse = args.settings.warehouse_dir
    if not Layout(warehouse).database.is_file():
        print(
            f"report: no {DATABASE} in {warehouse}: run `python -m pipelines materialize` first",
            file=sys.stderr,
        )
        return 1
    if args.rebuild or is_stale(warehouse):
        with writing(Layout(warehouse).report), store.writer_lock(warehouse):
            # Asked again under the lock: another process may have built it while this one waited.
            built, summary = build_report_if_stale(warehouse, force=args.rebuild)
        if built:
            print(f"report: built {summary.pages} pages and {summary.images} pictures", file=sys.stderr)
    index = Layout(warehouse).report / INDEX
    print(index)
    if args.open:
        open_in_browser(index)
    return 0


def open_in_browser(page: Path) -> bool:
    """Open the page where a browser exists; say so on stderr where none does."""
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        print("report: no browser found here; open the path above in one", file=sys.stderr)
        return False
    return browser.open(page.as_uri())


def add_report_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="build the static report (if missing or stale) and print the path of its index.html",
        description=f"Build WAREHOUSE_DIR/{REPORT}/ from {DATABASE} when it is missing or older than "
        "the database, then print the path of its index.html.",
    )
    parser.add_argument("--open", action="store_true", help="also open it in a browser, where one exists")
    parser.add_argument("--rebuild", action="store_true", help="build it even when it is up to date")
    parser.set_defaults(func=report)
