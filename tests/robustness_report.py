"""A pytest plugin: the counts of generated inputs and faults the robustness tests tried, and
how many ended accounted for, in the terminal summary and in `data/test-reports/robustness.json`.

Test modules load it with `pytest_plugins = ["robustness_report"]` and count with
`robustness_tally.trial`.
"""

from __future__ import annotations

import json

from robustness_tally import summary

from pipelines.core import settings

REPORT = settings.PROJECT_ROOT / "data" / "test-reports" / "robustness.json"


def pytest_terminal_summary(terminalreporter) -> None:
    report = summary()
    if not report["trials"]:
        return
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=2) + "\n")
    terminalreporter.section("robustness: inputs and faults tried")
    for kind, totals in report["totals"].items():
        terminalreporter.write_line(f"{kind}s: {totals['tried']} tried, {totals['accounted']} ended accounted for")
    for row in report["trials"]:
        mark = "" if row["tried"] == row["accounted"] else "   <-- NOT ALL ACCOUNTED FOR"
        terminalreporter.write_line(f"  {row['kind']:<15} {row['name']:<48} {row['accounted']:>5}/{row['tried']:<5}{mark}")
    verdict = "every one ended accounted for" if report["all_accounted"] else "SOME DID NOT END ACCOUNTED FOR"
    terminalreporter.write_line(f"{verdict}; report written to {REPORT.relative_to(settings.PROJECT_ROOT)}")
