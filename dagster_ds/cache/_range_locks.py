"""Reader leases on local caches as byte-range locks: one system call each, no file.

On Linux, a reader's lease on an entry of a local cache is a shared
open-file-description lock (``F_OFD_SETLK``) on one byte of
``<root>/leases/readers``, at an offset derived from the entry's key. An evictor
takes an exclusive lock on the same byte. The kernel decides between the two
atomically, and drops a process's locks when it dies: a reader killed with -9
leaves nothing behind. (A lease file costs a file creation, which on ext4 is
most of a cache hit's cost.)

Two keys can share a byte (one chance in 2^62): an entry is then kept, or a
reader misses once, never worse.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import threading
from collections.abc import Generator

import xxhash

#: Whether this platform has open-file-description locks (Linux); elsewhere leases are files.
AVAILABLE = hasattr(fcntl, "F_OFD_SETLK")

_FLOCK = "hhqqi4x"  # struct flock: l_type, l_whence, l_start, l_len, l_pid
_CONFLICT = (errno.EAGAIN, errno.EACCES)


def _slot(key: str) -> int:
    return xxhash.xxh3_64_intdigest(key.encode()) >> 2  # an offset that fits in off_t


def _request(lock_type: int, key: str) -> bytes:
    return struct.pack(_FLOCK, lock_type, os.SEEK_SET, _slot(key), 1, 0)


def _set(descriptor: int, lock_type: int, key: str) -> bool:
    """Take (or drop) a lock without waiting: False if another holder conflicts."""
    try:
        fcntl.fcntl(descriptor, fcntl.F_OFD_SETLK, _request(lock_type, key))
    except OSError as error:
        if error.errno in _CONFLICT:
            return False
        raise
    return True


def _open(path: str, *, make_folder: bool = False) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except FileNotFoundError:
        if not make_folder:
            raise
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return _open(path)


class ProcessReaderLocks:
    """This process's shared locks on one cache: one descriptor, a count per key.

    Locks taken through one descriptor do not nest (unlocking once drops them),
    hence the counts. A forked child opens its own descriptor: it must not drop
    the locks of the parent, whose descriptor it shares.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._mutex = threading.Lock()
        self._descriptor = -1
        self._pid = -1
        self._counts: dict[str, int] = {}

    def acquire(self, key: str) -> bool | None:
        """True: held; False: an eviction holds it; None: this filesystem has no such locks."""
        with self._mutex:
            try:
                if self._pid != os.getpid():
                    self._descriptor = _open(self._path, make_folder=True)
                    self._pid, self._counts = os.getpid(), {}
                count = self._counts.get(key, 0)
                if count == 0 and not _set(self._descriptor, fcntl.F_RDLCK, key):
                    return False
            except OSError:  # ENOLCK, EINVAL...: a filesystem without byte-range locks
                return None
            self._counts[key] = count + 1
            return True

    def release(self, key: str) -> None:
        """Drop one hold of ``key`` (the lock goes with the last one)."""
        with self._mutex:
            if self._pid != os.getpid():
                return  # a lease inherited by a forked child belongs to its parent
            count = self._counts.pop(key, 0)
            if count > 1:
                self._counts[key] = count - 1
            elif count == 1:
                with contextlib.suppress(OSError):
                    _set(self._descriptor, fcntl.F_UNLCK, key)


_registry: dict[str, ProcessReaderLocks] = {}
_registry_mutex = threading.Lock()


def reader_locks(path: str) -> ProcessReaderLocks:
    """The process-wide reader locks kept in the file ``path``."""
    with _registry_mutex:
        locks = _registry.get(path)
        if locks is None:
            locks = _registry[path] = ProcessReaderLocks(path)
        return locks


@contextlib.contextmanager
def exclusive(path: str, key: str) -> Generator[bool]:
    """Hold ``key``'s byte exclusively while no reader holds it; yields whether it was free.

    Its own descriptor, so that this process's readers conflict with it too.
    """
    try:
        descriptor = _open(path)
    except FileNotFoundError:  # no reader ever took a lock here
        yield True
        return
    try:
        try:
            free = _set(descriptor, fcntl.F_WRLCK, key)
        except OSError:
            free = True  # no byte-range locks here: only file leases can exist
        yield free
    finally:
        os.close(descriptor)  # the last descriptor of its description: the lock goes


def held(path: str, key: str) -> bool:
    """Whether some reader (this process included) holds ``key``'s byte."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        answer = fcntl.fcntl(descriptor, fcntl.F_OFD_GETLK, _request(fcntl.F_WRLCK, key))
    except OSError:
        return False
    finally:
        os.close(descriptor)
    return struct.unpack(_FLOCK, answer)[0] != fcntl.F_UNLCK
