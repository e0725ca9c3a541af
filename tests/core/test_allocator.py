"""polars' jemalloc gets the package's setting when `pipelines` is imported first (every entry point: the CLI, the
Dagster code location, the bench's phases), and a setting given in the environment still wins; what glibc's malloc
holds free is handed back when asked (`give_back_freed`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipelines.core import allocator
from pipelines.core.settings import PROJECT_ROOT

SHOW = "import pipelines, polars, os; print(os.environ[{env!r}])"


def _conf(env: dict[str, str]) -> str:
    command = [sys.executable, "-c", SHOW.format(env=allocator.JEMALLOC_ENV)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT, env=env, check=True, timeout=120)
    return done.stdout.strip()


def test_polars_loads_with_the_package_setting_last():
    env = {k: v for k, v in os.environ.items() if k != allocator.JEMALLOC_ENV}
    assert _conf(env).endswith(allocator.RETURN_FREED_MEMORY), "the package's setting is not the last polars reads"


def test_a_setting_given_in_the_environment_wins():
    conf = _conf({**os.environ, allocator.JEMALLOC_ENV: "dirty_decay_ms:7"})
    assert conf.endswith(f"{allocator.RETURN_FREED_MEMORY},dirty_decay_ms:7"), "the user's own setting is not the last"


# In a process of its own, whose heap is only this: 20,000 blocks of 8 KB (glibc's heap, not mmap) freed below one
# kept, so glibc cannot shrink its heap from the top and keeps them all; RSS read after the free and after the trim.
FRAGMENTED = """
import json
from pipelines.core import allocator
def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024
blocks = [bytes(8192) for _ in range(20_000)]
kept = bytes(8192)
before = rss()
del blocks
freed = rss()
allocator.give_back_freed()
print(json.dumps({"before": before, "freed": freed, "given_back": rss()}))
"""


@pytest.mark.skipif(allocator._MALLOC_TRIM is None or not os.path.exists("/proc/self/status"), reason="glibc's malloc on Linux only")
def test_what_glibc_keeps_free_is_given_back():
    done = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True, cwd=PROJECT_ROOT, check=True, timeout=120)
    rss = json.loads(done.stdout.strip().splitlines()[-1])
    assert rss["before"] - rss["freed"] < 40, f"glibc gave the blocks back on its own, the case proves nothing: {rss}"
    assert rss["freed"] - rss["given_back"] > 100, f"the 160 MB freed were not given back: {rss}"
