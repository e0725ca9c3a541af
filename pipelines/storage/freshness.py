"""Skip rebuilding an output whose inputs are the same files, read by the same code, as last time.

A stamp beside the output records a fingerprint of its inputs (each input file's
inode, mtime and size: a table commit renames a new file into place, which
changes all three), of the code that writes it, and what the build returned.
The output is fresh when the fingerprint matches and every file it wrote is
still there; a no-change run then returns the recorded result without
reading a table.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from pipelines.storage import store


def file_states(paths: list[Path]) -> list[list[object]]:
    """What changes whenever one of `paths` is replaced or rewritten (missing files included, as such)."""
    states: list[list[object]] = []
    for path in paths:
        if path.is_file():
            stat = path.stat()
            states.append([str(path), stat.st_ino, stat.st_mtime_ns, stat.st_size])
        else:
            states.append([str(path), None])
    return states


def code_fingerprint(modules: list[ModuleType]) -> str:
    return hashlib.sha256("\0".join(inspect.getsource(m) for m in modules).encode()).hexdigest()


def fingerprint(inputs: list[Path], code: list[ModuleType]) -> str:
    parts = {"inputs": file_states(inputs), "code": code_fingerprint(code)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def rebuild_if_stale(stamp: Path, key: str, outputs: Callable[[Any], list[Path]], build: Callable[[], Any]) -> tuple[bool, Any]:
    """(built, result): `build()` unless `stamp` records `key` and every output of its result exists.

    `outputs(result)` names the files a build wrote. The stamp is written after the build,
    so a build that fails or is killed leaves the output stale, never falsely fresh.
    """
    recorded = store.read_state(stamp)
    try:
        fresh = recorded.get("key") == key and all(p.is_file() for p in outputs(recorded["result"]))
    except (KeyError, TypeError):
        fresh = False  # a damaged stamp only costs a rebuild
    if fresh:
        return False, recorded["result"]
    result = build()
    store.write_json_atomic(stamp, {"key": key, "result": result})
    return True, result
