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
  same idea over fsspec: a JSON record with a token and a heartbeat counter.
  Best effort: object stores have no compare-and-swap in fsspec's API, so two
  contenders can, rarely, both break the same stale lock; the entry is still
  never mixed, because publishing checks for an existing manifest first.
"""

from __future__ import annotations

import abc
import contextlib
import secrets
import threading
import time
from typing import Literal

import filelock

from dagster_ds.cache._identity import Owner, current_owner
from dagster_ds.cache._json import dumps, parse_object
from dagster_ds.cache._layout import Layout
from dagster_ds.cache._storage import Storage

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
        self.path = path
        if mode == "lease":
            self._lock: filelock.BaseFileLock = filelock.SoftFileLease(
                path, lease_duration=stale_after, poll_interval=_POLL
            )
        else:
            self._lock = filelock.FileLock(path, poll_interval=_POLL)

    def acquire(self, timeout: float | None) -> bool:
        try:
            self._lock.acquire(timeout=-1 if timeout is None else timeout)
        except filelock.Timeout:
            return False
        return True

    def release(self) -> None:
        self._lock.release()


class ObjectLock(EntryLock):
    """A lock record on any storage, kept alive by a heartbeat thread.

    The record changes at every heartbeat (``stale_after / 3``). A contender
    breaks it when it has not changed for ``stale_after`` seconds, measured on
    the contender's own monotonic clock (so clock skew between hosts does not
    matter), or at once when its owner runs on this host and is dead.
    """

    def __init__(self, storage: Storage, path: str, stale_after: float) -> None:
        self.path = path
        self._storage = storage
        self._stale_after = stale_after
        self._token = secrets.token_hex(16)
        self._owner = current_owner()
        self._beat = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record(self) -> bytes:
        return dumps({"token": self._token, "owner": self._owner.to_json(), "beat": self._beat})

    def _read(self) -> bytes | None:
        try:
            return self._storage.read_bytes(self.path)
        except FileNotFoundError:
            return None

    def _is_ours(self, data: bytes | None) -> bool:
        record = parse_object(data) if data is not None else None
        return record is not None and record.get("token") == self._token

    def acquire(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: bytes | None = None
        seen_since = time.monotonic()
        while True:
            data = self._read()
            if data is None:
                created = self._storage.write_bytes(self.path, self._record(), exclusive=True)
                if created and self._is_ours(self._read()):
                    self._start_heartbeat()
                    return True
                continue
            if data != seen:
                seen, seen_since = data, time.monotonic()
            record = parse_object(data)
            owner = Owner.from_json(record.get("owner")) if record is not None else None
            dead = owner is not None and owner.is_dead()
            if dead or time.monotonic() - seen_since >= self._stale_after:
                # Break it only if it is still the record we judged stale.
                if self._read() == data:
                    self._storage.remove_file(self.path)
                continue
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(_POLL)

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._heartbeat, name=f"dagster-ds-lock-{self._token[:8]}", daemon=True
        )
        self._thread.start()

    def _heartbeat(self) -> None:
        interval = max(self._stale_after / 3, _POLL)
        while not self._stop.wait(interval):
            with contextlib.suppress(OSError):
                if not self._is_ours(self._read()):
                    return  # lost (broken by a contender): nothing more to refresh
                self._beat += 1
                self._storage.replace_bytes(self.path, self._record())

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._is_ours(self._read()):
            self._storage.remove_file(self.path)


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
