"""Processes that die with the process that started them.

A run killed with SIGKILL cannot stop its children: staging workers would wait forever on their pipe, and a
step process of a daemon run would go on writing after its run was failed. On Linux a child asks the kernel to
kill it when its parent dies (PR_SET_PDEATHSIG); elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Have this process killed when its parent dies; exit at once if the parent (`parent`, the pid that started this
    process, when known: a process started moments ago may already have lost it) is gone."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid() if parent is None else parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def step_dies_with_run() -> None:
    """In a step process of Dagster's multiprocess executor (a multiprocessing child of the run's process), die with
    the run's process; in a run executed in-process (the CLI) do nothing, since its parent is the user's shell."""
    if multiprocessing.parent_process() is not None:
        die_with_parent()
