"""The tally of what the robustness tests tried: each generated input or injected fault runs
inside `trial(kind, name)`, counted as tried when it starts and as accounted for only when its
body finishes without an exception, so a failed assertion shows as a gap between the two.
The plugin robustness_report prints and saves it."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

_tried: Counter[tuple[str, str]] = Counter()
_accounted: Counter[tuple[str, str]] = Counter()


@contextlib.contextmanager
def trial(kind: str, name: str) -> Iterator[None]:
    """One generated input ("generated input") or injected fault ("fault") named `name`."""
    _tried[kind, name] += 1
    yield
    _accounted[kind, name] += 1


def summary() -> dict:
    kinds = sorted({kind for kind, _ in _tried})
    return {
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "totals": {kind: {"tried": _sum(_tried, kind), "accounted": _sum(_accounted, kind)} for kind in kinds},
        "trials": [
            {"kind": kind, "name": name, "tried": _tried[kind, name], "accounted": _accounted[kind, name]} for kind, name in sorted(_tried)
        ],
        "all_accounted": all(_accounted[key] == count for key, count in _tried.items()),
    }


def _sum(counter: Counter[tuple[str, str]], kind: str) -> int:
    return sum(count for (k, _), count in counter.items() if k == kind)
