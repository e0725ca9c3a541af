"""Is the process that ran a Dagster run still there? Asked of runs left STARTED, by pid, on this machine.

A run whose process was killed (SIGKILL, an out-of-memory kill, a reboot) never reports its end, so
the instance shows it STARTED forever and a one-run queue waits behind it. Dagster's run monitoring
asks the run launcher whether the worker is healthy, but its default launcher cannot tell; this
answers from the operating system instead of a wall-clock limit, which would also fail a long
healthy run. A pid alone is not an identity (pids are reused), so a worker is the host, the boot and
the pid's start time; what cannot be checked from here (another host) is never called dead.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TAG_PREFIX = "liger/worker_"
# A process counts as the run's worker only if it existed when the run said it started (clock skew and
# the tick resolution of /proc are well under this).
START_SLACK_S = 2.0


@dataclass(frozen=True)
class Worker:
    host: str
    pid: int
    # /proc's boot id and the pid's start time in clock ticks since that boot; None where unknown.
    boot_id: str | None = None
    start_ticks: int | None = None

    def tags(self) -> dict[str, str]:
        values = {"host": self.host[:63], "pid": str(self.pid), "boot_id": self.boot_id, "start_ticks": self.start_ticks}
        return {f"{TAG_PREFIX}{key}": str(value) for key, value in values.items() if value is not None}

    @classmethod
    def from_tags(cls, tags: dict[str, str]) -> Worker | None:
        def get(key: str) -> str | None:
            return tags.get(f"{TAG_PREFIX}{key}")

        host, pid, start = get("host"), get("pid"), get("start_ticks")
        if host is None or pid is None or not pid.isdigit():
            return None
        return cls(host, int(pid), get("boot_id"), int(start) if start and start.isdigit() else None)


def hostname() -> str:
    return socket.gethostname()


def boot_id() -> str | None:
    try:
        return (PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None when there is no such pid."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except FileNotFoundError:
        return None
    return text[text.rindex(")") + 2 :].split()


def this_process() -> Worker:
    stat = _stat(os.getpid())
    return Worker(hostname(), os.getpid(), boot_id(), int(stat[19]) if stat else None)


def _boot_time() -> float | None:
    try:
        for line in (PROC / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def why_gone(worker: Worker, started_at: float | None = None) -> str | None:
    """Why `worker` is no longer running, or None when it is, or when that cannot be known from here.

    `started_at` (seconds since the epoch), when the worker's start time was not recorded, is when the
    run reported its process: a process with that pid started later is another one.
    """
    where = f"process {worker.pid} on {worker.host}"
    if worker.host != hostname():
        return None
    if not PROC.is_dir():
        return _why_gone_without_proc(worker.pid, where)
    if worker.boot_id and worker.boot_id != boot_id():
        return f"{where} ended with a restart of the machine"
    stat = _stat(worker.pid)
    if stat is None:
        return f"{where} is gone (killed or crashed without reporting)"
    if stat[0] in ("Z", "X"):
        return f"{where} was killed and has not been reaped"
    start_ticks = int(stat[19])
    if worker.start_ticks is not None and start_ticks != worker.start_ticks:
        return f"{where} is gone (its pid now belongs to another process)"
    boot = _boot_time()
    later = boot is not None and started_at is not None and boot + start_ticks / os.sysconf("SC_CLK_TCK") > started_at + START_SLACK_S
    if worker.start_ticks is None and later:
        return f"{where} is gone (its pid now belongs to a process started after the run)"
    return None


def _why_gone_without_proc(pid: int, where: str) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"{where} is gone (killed or crashed without reporting)"
    except PermissionError:
        pass
    return None
