"""Reader leases: "this process has entry X open", so gc leaves X alone.

A lease is a small JSON file ``<root>/leases/<fp[:2]>/<fp>/<pid>-<token>.json``
holding its owner (host, pid, process start time) and creation time. It is
written before the entry is read and removed when the `CacheEntry` holding it is
closed, garbage-collected, or at interpreter exit. A lease whose process is
gone (same host) is dead and is removed by whoever finds it; a lease from
another host, whose process cannot be checked, counts as live for
``foreign_ttl`` seconds after it was taken.

The protocol that makes eviction safe uses one more file, the eviction fence
``<root>/leases/<fp[:2]>/<fp>/evicting``:

- a reader writes its lease, *then* checks for a fence (a fence means a miss),
  then reads the entry;
- an evictor (holding the fingerprint's lock) writes the fence, *then* checks
  for leases, and unpublishes the entry only if there are none.

Whichever file is written second, its writer sees the other: either the reader
misses (and recomputes), or the evictor sees the lease and keeps the entry. A
fence whose owner died is ignored (and removed); one from another host expires
after ``FENCE_TTL`` seconds.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import secrets
import threading
import time
import weakref
from collections.abc import Generator

from dagster_ds.cache._identity import Owner, current_owner
from dagster_ds.cache._json import dumps, parse_object
from dagster_ds.cache._layout import Layout
from dagster_ds.cache._storage import Storage

#: How long a lease from another host counts as live (its process cannot be checked).
DEFAULT_FOREIGN_TTL = 24 * 3600.0

#: A fence from another host older than this is ignored (an eviction takes milliseconds).
FENCE_TTL = 300.0

_FENCE = "evicting"
_ATTEMPTS = 20


class Lease:
    """One reader's claim on one entry; `release` (or garbage collection, or exit) ends it."""

    def __init__(self, layout: Layout, key: str) -> None:
        self.key = key
        owner = current_owner()
        self.path = layout.lease_file(key, f"{owner.pid}-{secrets.token_hex(6)}.json")
        _write_record(layout, key, self.path, owner)
        self._storage = layout.storage
        self._pid = owner.pid
        self._finalizer = weakref.finalize(self, _collected, layout.storage, self.path, owner.pid)

    def release(self) -> None:
        """Remove the lease file now (idempotent)."""
        if self._finalizer.detach() is not None:
            _remove(self._storage, self.path, self._pid)

    @property
    def released(self) -> bool:
        return not self._finalizer.alive


def _write_record(layout: Layout, key: str, path: str, owner: Owner) -> None:
    data = dumps({"owner": owner.to_json(), "created": time.time()})
    for attempt in range(_ATTEMPTS):
        # gc removes an evicted entry's empty lease folder: it may vanish under us.
        try:
            layout.storage.makedirs(layout.lease_dir(key))
            layout.storage.write_bytes(path, data, durable=False)
            return
        except (FileNotFoundError, FileExistsError):
            if attempt == _ATTEMPTS - 1:
                raise


@contextlib.contextmanager
def eviction_fence(layout: Layout, key: str) -> Generator[None]:
    """Hold the fence of ``key`` (the caller holds its lock): new readers miss meanwhile."""
    path = layout.lease_file(key, _FENCE)
    _write_record(layout, key, path, current_owner())
    try:
        yield
    finally:
        layout.storage.remove_file(path)
        layout.storage.remove_empty_dir(layout.lease_dir(key))


def is_fenced(layout: Layout, key: str) -> bool:
    """Whether an eviction of ``key`` is under way (a reader must then miss)."""
    path = layout.lease_file(key, _FENCE)
    try:
        record = parse_object(layout.storage.read_bytes(path))
    except (FileNotFoundError, NotADirectoryError):
        return False
    owner = Owner.from_json(record.get("owner")) if record is not None else None
    created = record.get("created") if record is not None else None
    if owner is None or not isinstance(created, int | float):
        return True  # being written right now
    if owner.is_dead():
        layout.storage.remove_file(path)
        return False
    return owner.is_local or time.time() - created <= FENCE_TTL


def _remove(storage: Storage, path: str, pid: int) -> None:
    # A forked child inherits the parent's leases; only their owner removes them.
    if os.getpid() == pid:
        with contextlib.suppress(OSError):
            storage.remove_file(path)


def _collected(storage: Storage, path: str, pid: int) -> None:
    """A lease garbage-collected (or left at exit) without `release`."""
    if storage.is_local or os.getpid() != pid:
        _remove(storage, path, pid)
    else:
        # On object stores a removal is network I/O, and garbage collection may run
        # inside any code, an fsspec event loop included: a thread of its own does it.
        _REMOTE.submit(storage, path)


class _RemoteRemovals:
    """Removes remote lease files on a daemon thread; waits for them (bounded) at exit."""

    _EXIT_WAIT = 10.0

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Storage, str] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, storage: Storage, path: str) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="dagster_ds-lease-removal", daemon=True
                )
                self._thread.start()
                atexit.register(self._drain)
        self._queue.put((storage, path))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            with contextlib.suppress(Exception):  # a stale lease only delays gc (foreign_ttl)
                item[0].remove_file(item[1])

    def _drain(self) -> None:
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue.put(None)
            thread.join(self._EXIT_WAIT)


_REMOTE = _RemoteRemovals()


def live_leases(layout: Layout, key: str, *, foreign_ttl: float = DEFAULT_FOREIGN_TTL) -> int:
    """How many live leases ``key`` has; dead ones found on the way are removed."""
    storage = layout.storage
    live = 0
    for name in storage.listdir(layout.lease_dir(key)):
        if name == _FENCE:
            continue
        path = layout.lease_file(key, name)
        try:
            record = parse_object(storage.read_bytes(path))
        except FileNotFoundError:
            continue
        owner = Owner.from_json(record.get("owner")) if record is not None else None
        created = record.get("created") if record is not None else None
        if owner is None or not isinstance(created, int | float):
            # Being written right now, or garbage: judge by the file's age.
            mtime = storage.newest_mtime(path)
            if mtime is not None and time.time() - mtime > foreign_ttl:
                storage.remove_file(path)
            else:
                live += 1
        elif owner.is_dead():
            storage.remove_file(path)
        elif owner.is_local or time.time() - created <= foreign_ttl:
            live += 1
    return live
