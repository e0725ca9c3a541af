"""The console log of `python -m pipelines materialize`'s in-process run: Dagster's, one line per event.

Dagster's console logger appends a failed step's whole error chain and stack to its event line (73 lines
for a source that cannot be read), and the command ends with the error's one line anyway. Here each event
is its first line, unless the user asked for the stack (`--verbose`); the run's log in the instance (the UI)
keeps everything either way.

The run's own output is not captured (orchestration/instance_home, `capture_output=False`): Dagster's capture relays
it to the terminal through a `tail` and a watcher process of its own, which Ctrl-C (sent to the terminal's whole
process group) would stop mid-run, with a KeyboardInterrupt traceback of the watcher's.
"""

from __future__ import annotations

import logging

import dagster as dg

VERBOSE_HINT = " (the rest, and any stack: --verbose)"


class FirstLineOnly(logging.Filter):
    """Cut a record's message to its first line, saying where the rest is."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "\n" in message:
            record.msg, record.args = message.split("\n", 1)[0].rstrip() + VERBOSE_HINT, ()
        return True


def console_logger(verbose: bool) -> dg.LoggerDefinition:
    """Dagster's colored console logger (same configuration: `log_level`, `name`), its events on one line each
    unless `verbose`."""

    def create(init_context: dg.InitLoggerContext) -> logging.Logger:
        logger = dg.colored_console_logger.logger_fn(init_context)
        if not verbose:
            logger.addFilter(FirstLineOnly())
        return logger

    return dg.LoggerDefinition(
        create,
        config_schema=dg.colored_console_logger.config_schema,
        description="Dagster's console logger, one line per event (the stack with --verbose)",
    )


def interrupted(result: dg.ExecuteInProcessResult) -> bool:
    """Whether the run stopped because the user interrupted it (Ctrl-C, SIGINT; SIGTERM alike)."""
    for event in result.all_events:
        error = event.step_failure_data.error if event.is_step_failure and event.step_failure_data else None
        while error is not None:
            if error.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt"):
                return True
            error = error.cause
    return False
