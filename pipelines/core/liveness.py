"""Is the process that ran a Dagster run still there? Asked of runs left in progress, by pid, on this machine.

A run whose process was killed (SIGKILL, an out-of-memory kill, a reboot) never reports its end, so
the instance shows it STARTED forever and a one-run queue waits behind it. This answers from the
operating system's process table (psutil) instead of a wall-clock limit, which would also fail a long
healthy run. A pid alone is not an identity (pids are reused), so a worker is the host, the machine's
boot and the process's start time; what cannot be checked from here (another host) is never called dead.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

import psutil

TAG_PREFIX = "liger/worker_"
# A process counts as the run's worker only if it existed when the run said it started (clock skew and the
# resolution of a process's start time, a clock tick, are well under this).
START_SLACK_S = 2.0
# psutil's boot time is computed from the clock and the uptime, and may move by a second between calls; two boots
# are much further apart than this.
BOOT_SLACK_S = 5.0
# Start times are kept to the hundredth of a second, the resolution of Linux's clock ticks.
_STARTED_DIGITS = 2


@dataclass(frozen=True)
class Worker:
    host: str
    pid: int
    # When the machine booted and when the process started, seconds since the epoch; None where unknown.
    boot_time: float | None = None
    started: float | None = None

    def tags(self) -> dict[str, str]:
        values = {"host": self.host[:63], "pid": str(self.pid), "boot_time": self.boot_time, "started": self.started}
        return {f"{TAG_PREFIX}{key}": str(value) for key, value in values.items() if value is not None}

    @classmethod
    def from_tags(cls, tags: dict[str, str]) -> Worker | None:
        def get(key: str) -> str | None:
            return tags.get(f"{TAG_PREFIX}{key}")

        host, pid = get("host"), get("pid")
        if host is None or pid is None or not pid.isdigit():
            return None
        return cls(host, int(pid), _number(get("boot_time")), _number(get("started")))


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def hostname() -> str:
    return socket.gethostname()


def this_process() -> Worker:
    return Worker(hostname(), os.getpid(), psutil.boot_time(), started(os.getpid()))


def started(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch, to the hundredth), or None when there is none."""
    try:
        return round(psutil.Process(pid).create_time(), _STARTED_DIGITS)
    except psutil.Error:
        return None


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (killed, waiting to be reaped)."""
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


def why_gone(worker: Worker, started_at: float | None = None) -> str | None:
    """Why `worker` is no longer running, or None when it is, or when that cannot be known from here.

    `started_at` (seconds since the epoch), when the worker's start time was not recorded, is when the
    run reported its process: a process with that pid started later is another one.
    """
    where = f"process {worker.pid} on {worker.host}"
    if worker.host != hostname():
        return None
    if worker.boot_time is not None and abs(worker.boot_time - psutil.boot_time()) > BOOT_SLACK_S:
        return f"{where} ended with a restart of the machine"
    try:
        process = psutil.Process(worker.pid)
        status, created = process.status(), round(process.create_time(), _STARTED_DIGITS)
    except psutil.ZombieProcess:
        return f"{where} was killed and has not been reaped"
    except psutil.NoSuchProcess:
        return f"{where} is gone (killed or crashed without reporting)"
    except psutil.AccessDenied:
        return None  # another user's process: there, so not known to be gone
    if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
        return f"{where} was killed and has not been reaped"
    if worker.started is not None and created != worker.started:
        return f"{where} is gone (its pid now belongs to another process)"
    if worker.started is None and started_at is not None and created > started_at + START_SLACK_S:
        return f"{where} is gone (its pid now belongs to a process started after the run)"
    return None
