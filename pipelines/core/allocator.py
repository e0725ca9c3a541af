"""polars' bundled jemalloc, told to hand freed memory back to the system soon. It reads its settings once, when
polars loads, so this runs from `pipelines/__init__.py`, before any module of the package imports polars.

With polars' own settings, a page freed is kept 500 ms, then freed lazily (MADV_FREE) and kept another second, counted
in RSS all the while: the assembly's loop over buckets, which frees and allocates about a bucket's worth every few
hundred milliseconds, peaked 25-140 MB higher at 3M rows (docs/performance.md, "Normalization's peak by rows, the
allocator"). Dirty pages kept 100 ms or none lowered it further but cost 4-8% and a third more CPU.
"""

from __future__ import annotations

import os
import sys

JEMALLOC_ENV = "_RJEM_MALLOC_CONF"
# Dirty pages purged after polars' 500 ms, and at once, not through the lazily freed (muzzy) state.
RETURN_FREED_MEMORY = "muzzy_decay_ms:0"


def configure() -> None:
    """Put RETURN_FREED_MEMORY before any setting already in the environment (a user's own wins: jemalloc takes the
    last of each key); nothing once polars is loaded, which has read the environment already."""
    if "polars" in sys.modules:
        return
    given = os.environ.get(JEMALLOC_ENV)
    os.environ[JEMALLOC_ENV] = f"{RETURN_FREED_MEMORY},{given}" if given else RETURN_FREED_MEMORY
