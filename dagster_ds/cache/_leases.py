"""Reader leases: "this process has entry X open", so gc leaves X alone.

On a local cache (Linux), a lease is a shared byte-range lock (see
`_range_locks`): the kernel arbitrates between readers and evictors and drops
the locks of a dead process. Elsewhere (object stores, other systems, or
``lock_mode="lease"`` for folders shared by hosts without working locks), it is a
small JSON file ``<root>/leases/<fp[:2]>/<fp>/<pid>-<token>.json`` holding its
owner (host, pid, process start time) and creation time. It is written before
the entry is read and removed when the `CacheEntry` holding it is closed,
garbage-collected, or at interpreter exit. A lease file whose process is gone
(same host) is dead and is removed by whoever finds it; one from another host,
whose process cannot be checked, counts as live for ``foreign_ttl`` seconds
after it was taken.

The protocol that makes eviction safe uses one more file, the eviction fence
``<root>/leases/<fp[:2]>/<fp>/evicting``:

- a reader writes its lease, *then* checks for a fence (a fence means a miss),
  then reads the entry;
- an evictor (holding the fingerprint's lock) writes the fence, *then* takes the
  exclusive byte-range lock (where there are such locks) and checks for lease
  files, and unpublishes the entry only if no reader holds it either way.

Whichever file is written second, its writer sees the other: either the reader
misses (and recomputes), or the evictor sees the lease and keeps the entry. A
fence whose owner died is ignored (and removed); one from another host expires
after ``FENCE_TTL`` seconds. Evictors always check both kinds of lease, so
processes using either kind can share a cache.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import queue
import secrets
import threading
import time
import weakref
from collections.abc import Generator

from dagster_ds.cache import _range_locks as range_locks
from dagster_ds.cache._identity import Owner, current_owner
from dagster_ds.cache._json import dumps, parse_object
from dagster_ds.cache._layout import Layout
from dagster_ds.cache._range_locks import ProcessReaderLocks
from dagster_ds.cache._storage import Storage

#: How long a lease from another host counts as live (its process cannot be checked).
DEFAULT_FOREIGN_TTL = 24 * 3600.0

#: A fence from another host older than this is ignored (an eviction takes milliseconds).
FENCE_TTL = 300.0

_FENCE = "evicting"
_READERS = "readers"
_ATTEMPTS = 20


class Lease:
    """One reader's claim on one entry; `release` (or garbage collection, or exit) ends it.

    ``byte_range``: a byte-range lock where the cache is local and the platform has
    them (one system call), instead of a lease file.
    """

    def __init__(self, layout: Layout, key: str, *, byte_range: bool = True) -> None:
        self.key = key
        self._layout: Layout | None = layout
        self._refused = False
        owner = current_owner()
        locks = _reader_locks(layout) if byte_range else None
        taken = locks.acquire(key) if locks is not None else None
        if locks is not None and taken is not None:
            self._path: str | None = None
            self._refused = not taken  # nothing to release then
            release = functools.partial(_release_lock, locks, key, owner.pid) if taken else _nothing
            self._finalizer = weakref.finalize(self, release)
            self._release_now = release
            return
        path = self._path = layout.lease_file(key, f"{owner.pid}-{secrets.token_hex(6)}.json")
        _write_record(layout, key, path, owner)
        self._finalizer = weakref.finalize(self, _collected, layout.storage, path, owner.pid)
        self._release_now = functools.partial(_remove, layout.storage, path, owner.pid)

    def __reduce__(self) -> tuple[object, ...]:
        # Sent to another process (a worker given an open shard): there it is the
        # sender's lease, which only the sender ends.
        return _borrowed, (self.key,)

    def evicting(self) -> bool:
        """Whether an eviction of the entry is under way: the reader must then miss."""
        if self._layout is None:
            return False
        if self._path is None:  # every evictor takes the exclusive lock: no fence to read
            return self._refused
        return is_fenced(self._layout, self.key)

    def release(self) -> None:
        """End the lease now (idempotent)."""
        if self._finalizer.detach() is not None:
            self._release_now()

    @property
    def released(self) -> bool:
        return not self._finalizer.alive


def _borrowed(key: str) -> Lease:
    """Another process's lease, received by value: releasing it does nothing."""
    lease = Lease.__new__(Lease)
    lease.key = key
    lease._layout = None  # pyright: ignore[reportPrivateUsage]
    lease._refused = False  # pyright: ignore[reportPrivateUsage]
    lease._path = None  # pyright: ignore[reportPrivateUsage]
    lease._finalizer = weakref.finalize(lease, _nothing)  # pyright: ignore[reportPrivateUsage]
    lease._release_now = _nothing  # pyright: ignore[reportPrivateUsage]
    return lease


def _reader_locks(layout: Layout) -> ProcessReaderLocks | None:
    if not (range_locks.AVAILABLE and layout.storage.is_local):
        return None
    return range_locks.reader_locks(_readers_file(layout))


def _readers_file(layout: Layout) -> str:
    return layout.storage.join("leases", _READERS)


def _release_lock(locks: ProcessReaderLocks, key: str, pid: int) -> None:
    if os.getpid() == pid:
        locks.release(key)


def _nothing() -> None:
    return None


def _write_record(layout: Layout, key: str, path: str, owner: Owner) -> None:
    data = dumps({"owner": owner.to_json(), "created": time.time()})
    for attempt in range(_ATTEMPTS):
        # The lease folder is made on demand, and gc removes an evicted entry's empty
        # lease folder: it may vanish under us.
        try:
            layout.storage.write_bytes(path, data, durable=False)
            return
        except FileNotFoundError:
            if attempt == _ATTEMPTS - 1:
                raise
            with contextlib.suppress(FileNotFoundError, FileExistsError):
                layout.storage.makedirs(layout.lease_dir(key))


@contextlib.contextmanager
def eviction_fence(layout: Layout, key: str, *, foreign_ttl: float) -> Generator[int]:
    """Fence ``key`` from new readers; yields how many live readers still hold it.

    The caller holds the fingerprint's lock. Readers that come meanwhile miss.
    """
    path = layout.lease_file(key, _FENCE)
    _write_record(layout, key, path, current_owner())
    try:
        if range_locks.AVAILABLE and layout.storage.is_local:
            with range_locks.exclusive(_readers_file(layout), key) as free:
                yield (0 if free else 1) + _live_lease_files(layout, key, foreign_ttl)
        else:
            yield _live_lease_files(layout, key, foreign_ttl)
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
    """How many live leases ``key`` has (byte-range locks count as one); dead ones are removed."""
    locked = (
        range_locks.AVAILABLE
        and layout.storage.is_local
        and range_locks.held(_readers_file(layout), key)
    )
    return int(locked) + _live_lease_files(layout, key, foreign_ttl)


def _live_lease_files(layout: Layout, key: str, foreign_ttl: float) -> int:
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
