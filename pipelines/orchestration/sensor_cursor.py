"""The upstream sensor's cursor: the last upstream head the warehouse holds, and the run asked for a newer one.

The cursor moves past a head only once the run asked for it succeeded (or nothing needed a run). A run that
failed is asked for again, with a new run key, after a backoff that doubles with each attempt (the sensor's
interval, twice that, ...; at most a day), so a failed ingest is retried by the sensor, not left to the next
day's schedule. A cursor with nothing pending is the head alone, as it always was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# The longest wait before a failed run is asked for again.
MAX_BACKOFF_S = 86_400
# How long a run asked for may take to appear in the instance before it counts as lost (the daemon launches it
# right after the tick; a queue full of other runs delays it, never this long).
LOST_AFTER_S = 6 * 3600


@dataclass(frozen=True)
class Pending:
    """The run asked for to bring the warehouse to `head`: its attempt (0 the first) and when it was asked for."""

    head: str
    attempt: int
    asked_at: float

    def retry_at(self, interval_s: float) -> float:
        return self.asked_at + min(interval_s * 2**self.attempt, MAX_BACKOFF_S)


@dataclass(frozen=True)
class SensorCursor:
    head: str | None
    pending: Pending | None = None

    @classmethod
    def parse(cls, text: str | None) -> SensorCursor:
        """A cursor as the sensor wrote it: a head alone, or JSON with the run pending; anything else is no cursor
        (the next tick then compares upstream with the warehouse from scratch, which asks for nothing twice)."""
        if not text:
            return cls(None)
        if not text.startswith("{"):
            return cls(text)
        try:
            raw = json.loads(text)
            pending = raw.get("pending")
            return cls(
                raw.get("head"), Pending(str(pending["head"]), int(pending["attempt"]), float(pending["asked_at"])) if pending else None
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls(None)

    def dump(self) -> str | None:
        if self.pending is None:
            return self.head
        pending = {"head": self.pending.head, "attempt": self.pending.attempt, "asked_at": self.pending.asked_at}
        return json.dumps({"head": self.head, "pending": pending}, sort_keys=True)

    def asked(self, head: str, now: float, retry: bool) -> SensorCursor:
        """The cursor once a run for `head` is asked for: the next attempt when it retries a failed one."""
        attempt = self.pending.attempt + 1 if retry and self.pending is not None else 0
        return SensorCursor(self.head, Pending(head, attempt, now))

    def succeeded(self) -> SensorCursor:
        return SensorCursor(self.pending.head if self.pending else self.head)
