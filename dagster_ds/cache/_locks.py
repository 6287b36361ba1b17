"""One lock per fingerprint, so that only one process builds an entry.

Three kinds, chosen by the store's ``lock_mode``:

- ``"flock"`` (local folders, the default there): `filelock.FileLock`, an OS
  ``flock``. The kernel releases it when its process dies, so a killed builder
  never leaves a stale lock behind. On filesystems without ``flock`` filelock
  falls back to a marker file whose dead owners (pid, host) are detected.
- ``"lease"`` (local folders shared by several hosts, e.g. NFS):
  `filelock.SoftFileLease`, a marker file refreshed by a heartbeat thread and
  taken over once it has not changed for ``stale_after`` seconds.
- object stores (any non-local fsspec URL, always): `ObjectLock` below, the
  same idea over fsspec: a JSON record with a token and a heartbeat counter,
  created, refreshed, taken over and removed by conditional writes (S3's
  ``If-None-Match`` / ``If-Match``): two requests for an uncontended lock, and
  no listing. Other fsspec filesystems have no conditional writes: there it is
  best effort, and an entry is still never mixed (publishing checks first).
"""

from __future__ import annotations

import abc
import contextlib
import secrets
import threading
import time
from typing import TYPE_CHECKING, Literal

from dagster_ds.cache._identity import Owner, current_owner
from dagster_ds.cache._json import dumps, parse_object
from dagster_ds.cache._layout import Layout
from dagster_ds.cache._storage import Storage

if TYPE_CHECKING:
    import filelock

LockMode = Literal["auto", "flock", "lease"]
LOCK_MODES: tuple[LockMode, ...] = ("auto", "flock", "lease")

_POLL = 0.05


class EntryLock(abc.ABC):
    """A lock on one fingerprint; one instance per acquisition."""

    path: str

    @abc.abstractmethod
    def acquire(self, timeout: float | None) -> bool:
        """Wait until the lock is held (True), or ``timeout`` seconds passed (False)."""

    @abc.abstractmethod
    def release(self) -> None: ...


class FileEntryLock(EntryLock):
    def __init__(self, path: str, mode: LockMode, stale_after: float) -> None:
        import filelock  # its 20 modules load when a lock is first taken, not at import

        self.path = path
        if mode == "lease":
            self._lock: filelock.BaseFileLock = filelock.SoftFileLease(
                path, lease_duration=stale_after, poll_interval=_POLL
            )
        else:
            self._lock = filelock.FileLock(path, poll_interval=_POLL)

    def acquire(self, timeout: float | None) -> bool:
        import filelock

        try:
            self._lock.acquire(timeout=-1 if timeout is None else timeout)
        except filelock.Timeout:
            return False
        return True

    def release(self) -> None:
        self._lock.release()


class ObjectLock(EntryLock):
    """A lock record on any storage: created by a conditional write, kept alive by a heartbeat.

    Nothing is listed. Acquiring is one conditional create (S3: ``PUT`` with
    ``If-None-Match: *``), releasing one conditional delete of the version this
    lock wrote (``If-Match``). The heartbeat rewrites the record every
    ``stale_after / 3`` seconds, conditionally on the version it wrote last, so
    each beat changes the record's version (its ETag).

    A contender whose create fails reads the record's version (a ``HEAD``), and
    the record itself once per new version, to learn its owner. It judges the
    record stale when its version has not changed for ``stale_after`` seconds on
    the contender's own monotonic clock (clock skew between hosts does not
    matter), or at once when its owner runs on this host and is dead. It takes a
    stale record over by a conditional write on the very version it judged: of
    several contenders exactly one succeeds, and a record that beat meanwhile is
    never taken. Where the storage has no conditional writes (fsspec's other
    filesystems) each step is a check then a write: best effort, and an entry is
    still never mixed, because publishing checks for an existing manifest first.
    """

    def __init__(self, storage: Storage, path: str, stale_after: float) -> None:
        self.path = path
        self._storage = storage
        self._stale_after = stale_after
        self._token = secrets.token_hex(16)
        self._owner = current_owner()
        self._beat = 0
        self._version: str | None = None  # of the record this lock wrote last
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record(self) -> bytes:
        return dumps({"token": self._token, "owner": self._owner.to_json(), "beat": self._beat})

    def _owner_is_dead(self) -> bool:
        """Whether the record's owner is known dead (it runs on this host, and is gone)."""
        try:
            record = parse_object(self._storage.read_bytes(self.path))
        except FileNotFoundError:
            return False
        owner = Owner.from_json(record.get("owner")) if record is not None else None
        return owner is not None and owner.is_dead()

    def acquire(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: str | None = None
        seen_since = time.monotonic()
        dead = False
        version = self._storage.put_if(self.path, self._record(), None)
        while version is None:
            current = self._storage.version(self.path)
            if current is None:  # released meanwhile
                version = self._storage.put_if(self.path, self._record(), None)
                continue
            if current != seen:  # it beat (or is another record): judged afresh
                seen, seen_since = current, time.monotonic()
                dead = self._owner_is_dead()
            if dead or time.monotonic() - seen_since >= self._stale_after:
                version = self._storage.put_if(self.path, self._record(), current)
                continue
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(_POLL)
        self._version = version
        self._start_heartbeat()
        return True

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._heartbeat, name=f"dagster-ds-lock-{self._token[:8]}", daemon=True
        )
        self._thread.start()

    def _heartbeat(self) -> None:
        interval = max(self._stale_after / 3, _POLL)
        while not self._stop.wait(interval) and self._version is not None:
            with contextlib.suppress(OSError):
                self._beat += 1
                # None: taken over by a contender (we stalled): nothing more to refresh.
                self._version = self._storage.put_if(self.path, self._record(), self._version)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._version is not None:
            self._storage.remove_if(self.path, self._version)  # only if still ours
            self._version = None


class _HeldByThread(threading.local):
    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}


_HELD = _HeldByThread()


class _ReentrantLock(EntryLock):
    """A thread that already holds a fingerprint's lock gets it again at once.

    Without this, a build that publishes its own fingerprint (a nested writer)
    would wait forever on a second OS lock of the same file.
    """

    def __init__(self, inner: EntryLock, token: tuple[str, str]) -> None:
        self.path = inner.path
        self._inner = inner
        self._token = token

    def acquire(self, timeout: float | None) -> bool:
        counts = _HELD.counts
        if self._token not in counts:
            if not self._inner.acquire(timeout):
                return False
            counts[self._token] = 0
        counts[self._token] += 1
        return True

    def release(self) -> None:
        counts = _HELD.counts
        counts[self._token] -= 1
        if counts[self._token] == 0:
            del counts[self._token]
            self._inner.release()


def make_lock(layout: Layout, key: str, mode: LockMode, stale_after: float) -> EntryLock:
    """A new lock on ``key`` (acquire it to hold it; reentrant within a thread)."""
    layout.storage.makedirs(layout.lock_dir(key))
    path = layout.lock_file(key)
    if layout.storage.is_local:
        inner: EntryLock = FileEntryLock(path, mode, stale_after)
    else:
        inner = ObjectLock(layout.storage, path, stale_after)
    return _ReentrantLock(inner, (layout.storage.url, key))
