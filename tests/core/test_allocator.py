"""polars' jemalloc gets the package's setting when `pipelines` is imported first (every entry point: the CLI, the
Dagster code location, the bench's phases), and a setting given in the environment still wins."""

from __future__ import annotations

import os
import subprocess
import sys

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
