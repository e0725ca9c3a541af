"""Run the steps of a loop at the same time: an iterator's work in a thread, a bounded number of items ahead.

polars, pyarrow and zlib-style codecs release the GIL for their heavy work, so
a chain `ahead(step2(x) for x in ahead(step1()))` keeps both cores busy
while holding at most a few items in memory.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
_DONE = object()


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


def ahead(items: Iterable[T], depth: int = 1) -> Iterator[T]:
    """The items of `items`, computed in a background thread at most `depth` items ahead of the consumer.

    An exception in the producer is raised in the consumer at the same place in the sequence. When the
    consumer stops early, the producer finishes the item at hand, stops and closes `items`.
    """
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        iterator = iter(items)
        try:
            for item in iterator:
                if not _put(slots, item, stop):
                    return
            _put(slots, _DONE, stop)
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, which raises it
            _put(slots, _Raised(error), stop)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = slots.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join()


def _put(slots: queue.Queue, item: object, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            slots.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False
