"""Reading the next batch of a source while the consumer works on the current one.

Decoding a Parquet row group, or parsing a block of JSON or CSV, runs in Arrow's C++
code with the GIL released. Doing it for the *next* batch on a thread, while the
caller formats or maps the current one, overlaps the two: the stream then costs
about the larger of the two instead of their sum.

One batch is read ahead per source being iterated, on a thread that lives as long as
that iteration, so memory grows by at most one batch per open source. At most
`MAX_READERS` sources of a process read ahead at once (the others read as they go,
as before), so interleaving many sources starts no more threads than that.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar, cast

from dagster_ds.errors import InvalidStateError

T = TypeVar("T")

MAX_READERS = 2
_slots = threading.BoundedSemaphore(MAX_READERS)
_END = object()


def _new_slots() -> None:
    """A forked child's own slots (its parent's reader threads do not exist there)."""
    global _slots
    _slots = threading.BoundedSemaphore(MAX_READERS)


os.register_at_fork(after_in_child=_new_slots)


def read_ahead(items: Iterator[T]) -> Generator[T, None, None]:
    """The items of ``items`` in order, the next one made on a thread while this one is used.

    Exceptions reach the caller where their item would have. Closing the result (or
    dropping it) closes ``items`` once the thread has left it, and ends the thread.
    An iteration started before the process forked cannot go on in the child: a
    clear error says to start it again there.

    Example:
        >>> list(read_ahead(iter(range(3))))
        [0, 1, 2]
    """
    if not _slots.acquire(blocking=False):  # enough sources read ahead already
        yield from items
        return
    owner = os.getpid()
    thread = ThreadPoolExecutor(1, thread_name_prefix="dagster_ds-read-ahead")
    pending: Future[object] | None = None
    try:
        pending = thread.submit(next, items, _END)
        while True:
            item = pending.result() if os.getpid() == owner else _forked()
            if item is _END:
                return
            pending = thread.submit(next, items, _END)
            yield cast("T", item)
    finally:
        if os.getpid() == owner:
            if pending is not None:
                pending.cancel()
            thread.shutdown(wait=True)  # the thread has left `items`: it may be closed
            close = getattr(items, "close", None)
            if close is not None:
                close()
            _slots.release()


def _forked() -> object:
    raise InvalidStateError(
        "A streaming iteration started in another process cannot go on after a fork: "
        "start the iteration again in this process (iter(dataset))."
    )
