"""The console log of `python -m pipelines materialize`'s in-process run: Dagster's, one line per event.

Dagster's console logger appends a failed step's whole error chain and stack to its event line (73 lines
for a source that cannot be read), and the command ends with the error's one line anyway. Here each event
is its first line, unless the user asked for the stack (`--verbose`); the run's log in the instance (the UI)
keeps everything either way.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
from collections.abc import Iterator

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


class _OwnGroupSubprocess:
    """The `subprocess` module, but each Popen starts a process group of its own."""

    def __getattr__(self, name: str):
        return getattr(subprocess, name)

    @staticmethod
    def Popen(*args, **kwargs) -> subprocess.Popen:  # noqa: N802 (the name it stands in for)
        return subprocess.Popen(*args, process_group=0, **kwargs)


@contextlib.contextmanager
def helpers_spared_by_ctrl_c() -> Iterator[None]:
    """While a run captures its output, Dagster (1.13, `compute_logs.execute_posix_tail`) relays it through a `tail`
    and a Python watcher of its own. Ctrl-C reaches the terminal's whole process group: the watcher would print a
    KeyboardInterrupt traceback and `tail` would stop relaying. Started in groups of their own, they keep relaying
    until the run stops them, and the interrupted run says so in one line."""
    from dagster._core.execution import compute_logs

    original = compute_logs.subprocess
    compute_logs.subprocess = _OwnGroupSubprocess()
    try:
        yield
    finally:
        compute_logs.subprocess = original
