"""polars' bundled jemalloc, told to hand freed memory back to the system soon. It reads its settings once, when
polars loads, so this runs from `pipelines/__init__.py`, before any module of the package imports polars.

With polars' own settings, a page freed is kept 500 ms, then freed lazily (MADV_FREE) and kept another second, counted
in RSS all the while: the assembly's loop over buckets, which frees and allocates about a bucket's worth every few
hundred milliseconds, peaked 25-140 MB higher at 3M rows (docs/performance.md, "Normalization's peak by rows, the
allocator"). Dirty pages kept 100 ms or none lowered it further but cost 4-8% and a third more CPU.

What Arrow allocates outside its memory pool (its Parquet readers' and writers' metadata and encoders) goes to glibc's
malloc, which keeps what is freed: `give_back_freed` hands it back, and what Arrow's pool (mimalloc) keeps too.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

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


def _glibc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to call, and no such heap to trim
        return None


_MALLOC_TRIM = _glibc_trim()


def give_back_freed() -> None:
    """Hand the pages Arrow's memory pool and glibc's malloc hold free back to the system; called once per batch of
    the loops whose peak must not grow with the rows (staging's chunks, the assembly's flushes and buckets, the checks'
    batches).

    Arrow's Parquet readers and writers allocate their encoders and metadata with glibc's malloc, not a memory pool,
    and glibc keeps what they free in its heaps' gaps, which only `malloc_trim` releases (docs/performance.md). A call
    costs from under a millisecond (a checks' batch) to about 13 ms (a staging chunk, when most of it was just freed:
    0.24 s over the 18 chunks of a 1M-row file, on a thread that mostly waits for the chunks to be read).
    """
    # Imported here: `configure` runs before pyarrow may load.
    import pyarrow

    pyarrow.default_memory_pool().release_unused()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
