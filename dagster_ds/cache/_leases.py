"""Usage records: which entries a process reads, one small file per process, so gc spares them.

A process that reads an entry's data keeps it in its *usage record*,
``<root>/usage/<host>-<pid>-<token>``: a first line with its owner (host, pid,
process start) and creation time, then one entry key per line, and a last line
``ended <unix time>`` once the process has exited. The record is written when the
process first reads data, with every key it holds open at that moment, and again
only when it reads an entry it had not recorded (locally one appended line; on an
object store the record is rewritten whole). Looking entries up, and a refresh that
skips, write nothing.

Evicting uses one more kind of file, an eviction notice
``<root>/usage/evicting/<token>`` listing the keys an evictor is about to remove:

- a reader records its keys, *then* reads the notices (a key named there is not
  read: the entry is treated as gone and recomputed);
- an evictor writes its notice, *then* reads every live record, and removes only
  keys no live record names.

Whichever file is written second, its writer sees the other one. A record whose
process is dead (same host), or that ended, pins nothing; one of another host,
whose process cannot be checked, pins its keys for ``foreign_ttl`` seconds after it
was last written. Ended and dead records are the coarse "last used" times gc
orders eviction by (see `usage_times`); gc folds them into ``usage/last-used.json``.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import secrets
import threading
import time
import weakref
from collections.abc import Collection, Generator, Iterable, Iterator
from dataclasses import dataclass

from dagster_ds.cache._identity import Owner, current_owner
from dagster_ds.cache._json import dumps, parse_object
from dagster_ds.cache._layout import Layout, is_fingerprint
from dagster_ds.cache._storage import Storage

#: How long a usage record of another host counts as live (its process cannot be checked).
DEFAULT_FOREIGN_TTL = 24 * 3600.0

#: An eviction notice older than this is ignored (an eviction takes seconds).
NOTICE_TTL = 300.0

_USAGE = "usage"
_EVICTING = "evicting"
_SUMMARY = "last-used.json"
_ENDED = "ended"
#: A record naming more than twice the keys held, plus this, is rewritten smaller.
_COMPACT_SLACK = 1024
#: Seconds the exit waits for remote records to be marked ended.
_EXIT_WAIT = 5.0


class _ProcessRecord:
    """This process's usage record in one store: the keys it holds, and those written.

    Garbage collection may end a lease (`release`) in any thread at any moment, an
    fsspec event loop's included, while another thread waits on that loop to write
    the record: a release therefore takes no lock (it is queued, and applied by the
    next reader of the held keys), and no lock is held across I/O but the writer's own.
    """

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._held_lock = threading.Lock()  # the held keys only; never held across I/O
        self._write_lock = threading.Lock()  # writing the record: what was written
        self._held: dict[str, int] = {}
        self._released: collections.deque[str] = collections.deque()
        self._written: set[str] = set()
        self._owner = current_owner()
        name = f"{self._owner.host}-{self._owner.pid}-{secrets.token_hex(6)}"
        self._path = storage.join(_USAGE, name)
        self._created = False
        self._lines: list[str] = []

    @property
    def pid(self) -> int:
        return self._owner.pid

    @property
    def is_local(self) -> bool:
        return self._storage.is_local

    def use(self, storage: Storage) -> None:
        self._storage = storage

    def hold(self, key: str) -> None:
        with self._held_lock:
            self._apply_releases()
            self._held[key] = self._held.get(key, 0) + 1

    def release(self, key: str) -> None:
        self._released.append(key)  # atomic: safe from a finalizer in any thread

    def _apply_releases(self) -> None:
        while self._released:
            key = self._released.popleft()
            count = self._held.get(key, 0) - 1
            if count > 0:
                self._held[key] = count
            else:
                self._held.pop(key, None)

    def held(self) -> set[str]:
        with self._held_lock:
            self._apply_releases()
            return set(self._held)

    def pin(self, key: str) -> bool:
        """Record ``key`` (and every other key held and not yet recorded); False if evicting.

        Once a key is recorded and no eviction notice names it, no evictor removes it
        while this record lives.
        """
        with self._write_lock:
            if key in self._written:
                return True
            held = self.held()
            if len(self._written) > 2 * len(held) + _COMPACT_SLACK:
                self._compact(held)
            new = sorted((held | {key}) - self._written)
            self._write(new)
            self._written.update(new)
        evicting = evicting_keys(self._storage, new)
        if not evicting:
            return True
        with self._write_lock:
            self._written.difference_update(evicting)
        return key not in evicting

    def _compact(self, held: set[str]) -> None:
        """Rewrite the record with the keys held now (most recorded ones were closed)."""
        self._lines = self._lines[:1]
        self._written = set(held)
        self._lines.extend(_key_lines(sorted(self._written)))
        data = "".join(f"{line}\n" for line in self._lines).encode()
        self._storage.replace_bytes(self._path, data)

    def _write(self, keys: list[str]) -> None:
        storage = self._storage
        if not self._created:
            storage.makedirs(storage.join(_USAGE))
            header = dumps({"owner": self._owner.to_json(), "created": time.time()}).decode()
            self._lines = [header]
            self._created = True
        lines = _key_lines(keys)
        if storage.is_local and len(self._lines) > 1:
            storage.append_bytes(self._path, "".join(f"{line}\n" for line in lines).encode())
            self._lines.extend(lines)
            return
        self._lines.extend(lines)
        storage.write_bytes(
            self._path, "".join(f"{line}\n" for line in self._lines).encode(), durable=False
        )

    def end(self) -> None:
        """At exit: mark the record ended (its keys stay, as their last-use time)."""
        if not self._created or os.getpid() != self._owner.pid:
            return
        line = f"{_ENDED} {time.time()}"
        # Best effort: a record left unmarked pins nothing once its process is gone (or,
        # from another host, after foreign_ttl); an object store may be unreachable by now.
        with contextlib.suppress(Exception):
            if self._storage.is_local:
                self._storage.append_bytes(self._path, f"{line}\n".encode())
            else:
                self._lines.append(line)
                data = "".join(f"{item}\n" for item in self._lines).encode()
                self._storage.write_bytes(self._path, data, durable=False)


def _key_lines(keys: Iterable[str]) -> list[str]:
    now = time.time()
    return [f"{key} {now:.3f}" for key in keys]


class _Records:
    """The usage record of this process in each store it reads (by `Storage.identity`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, _ProcessRecord] = {}
        atexit.register(self._end_all)

    def of(self, storage: Storage) -> _ProcessRecord:
        with self._lock:
            record = self._records.get(storage.identity)
            if record is None or record.pid != os.getpid():  # a forked child starts its own
                record = self._records[storage.identity] = _ProcessRecord(storage)
            else:  # the same store: write through the newest handle (an old one may be closed)
                record.use(storage)
            return record

    def held_here(self, storage: Storage) -> set[str]:
        with self._lock:
            record = self._records.get(storage.identity)
        return record.held() if record is not None and record.pid == os.getpid() else set()

    def _end_all(self) -> None:
        with self._lock:
            records = list(self._records.values())
        remote = [record for record in records if not record.is_local]
        for record in records:
            if record.is_local:
                record.end()
        if remote:  # network I/O at exit: bounded, so a hung store never hangs the exit
            ender = threading.Thread(target=lambda: [record.end() for record in remote])
            ender.daemon = True
            try:
                ender.start()
            except RuntimeError:  # CPython >= 3.12 starts no thread at exit: left unmarked
                return
            ender.join(_EXIT_WAIT)


_RECORDS = _Records()


class Lease:
    """One reader's claim on one entry; `release` (or garbage collection, or exit) ends it.

    Taking a lease writes nothing: the key is held in this process's memory, and
    `pin` records it in the store's usage record when its data is first read.
    """

    def __init__(self, layout: Layout, key: str) -> None:
        self.key = key
        self._record: _ProcessRecord | None = _RECORDS.of(layout.storage)
        self._record.hold(key)
        self._finalizer: weakref.finalize[..., Lease] = weakref.finalize(
            self, _release, self._record, key
        )

    def __reduce__(self) -> tuple[object, ...]:
        # Sent to another process (a worker given an open shard): there it is the
        # sender's lease, which only the sender ends.
        return _borrowed, (self.key,)

    def evicting(self) -> bool:
        """Whether this process is evicting the entry (checked after taking the lease).

        A gc of this process announces its keys here before it looks at what this
        process holds: either it sees this lease, or this lease sees its notice.
        Other processes' evictions are checked by `pin`.
        """
        return self._record is not None and _LOCAL_NOTICES.names(self.key)

    def pin(self) -> bool:
        """Record the entry as read by this process; False if an eviction of it is under way."""
        if self._record is None:
            return True
        if self.released:
            return False
        return self._record.pin(self.key)

    def release(self) -> None:
        """End the lease now (idempotent)."""
        self._finalizer()

    @property
    def released(self) -> bool:
        return not self._finalizer.alive


def _release(record: _ProcessRecord, key: str) -> None:
    if os.getpid() == record.pid:  # a forked child's inherited leases are not its own
        record.release(key)


def _borrowed(key: str) -> Lease:
    """Another process's lease, received by value: releasing it does nothing."""
    lease = Lease.__new__(Lease)
    lease.key = key
    lease._record = None  # pyright: ignore[reportPrivateUsage]
    lease._finalizer = weakref.finalize(lease, _nothing)  # pyright: ignore[reportPrivateUsage]
    return lease


def _nothing() -> None:
    return None


class ReadOnlyLease(Lease):
    """A claim on an entry of a store this process only reads (``read_from=``): writes nothing.

    Nothing can pin an entry of a store one may not write, so its gc may remove the
    entry at any time: a read then finds its files missing and fails clearly (never
    wrong rows: each file is checked against the manifest when first read). `pin`
    only looks for an eviction notice (a read), once per entry in this process.
    """

    def __init__(self, storage: Storage, key: str) -> None:  # pyright: ignore[reportMissingSuperCall]
        self.key = key
        self._record = None
        self._finalizer = weakref.finalize(self, _nothing)
        self._storage = storage

    def evicting(self) -> bool:
        return _LOCAL_NOTICES.names(self.key)

    def pin(self) -> bool:
        if self.released:
            return False
        token = (self._storage.identity, self.key)
        if token in _UNEVICTED:
            return True
        if evicting_keys(self._storage, [self.key]):
            return False
        _UNEVICTED.add(token)
        return True


#: (store, key) of read-only entries found with no eviction notice, in this process.
_UNEVICTED: set[tuple[str, str]] = set()


# -- evictors ------------------------------------------------------------------------------


class _LocalNotices:
    """The keys this process's evictors are removing right now (checked by new leases)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, int] = {}

    def add(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._keys[key] = self._keys.get(key, 0) + 1

    def remove(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                count = self._keys.pop(key, 1) - 1
                if count > 0:
                    self._keys[key] = count

    def names(self, key: str) -> bool:
        with self._lock:
            return key in self._keys


_LOCAL_NOTICES = _LocalNotices()


@contextlib.contextmanager
def eviction_notice(
    layout: Layout, keys: Collection[str], *, foreign_ttl: float
) -> Generator[set[str]]:
    """Announce that ``keys`` are being evicted; yields those some live process still reads.

    The caller holds each key's lock. Readers that come meanwhile treat the keys as gone.
    """
    storage = layout.storage
    folder = storage.join(_USAGE, _EVICTING)
    storage.makedirs(folder)
    path = storage.child(folder, secrets.token_hex(8))
    notice = {"owner": current_owner().to_json(), "created": time.time(), "keys": sorted(keys)}
    storage.write_bytes(path, dumps(notice), durable=False)
    _LOCAL_NOTICES.add(keys)
    try:
        pinned = pinned_keys(layout, foreign_ttl=foreign_ttl)
        yield {key for key in keys if key in pinned}
    finally:
        _LOCAL_NOTICES.remove(keys)
        storage.remove_file(path)


def evicting_keys(storage: Storage, keys: Iterable[str]) -> set[str]:
    """Those of ``keys`` that a live eviction notice names."""
    wanted = set(keys)
    found: set[str] = set()
    folder = storage.join(_USAGE, _EVICTING)
    for name in _notice_names(storage):
        try:
            notice = parse_object(storage.read_bytes(storage.child(folder, name)))
        except FileNotFoundError:
            continue
        owner = Owner.from_json(notice.get("owner")) if notice is not None else None
        created = notice.get("created") if notice is not None else None
        listed = notice.get("keys") if notice is not None else None
        if owner is None or not isinstance(created, int | float) or not isinstance(listed, list):
            found |= wanted  # being written right now: assume the worst
            continue
        if owner.is_dead() or (not owner.is_local and time.time() - created > NOTICE_TTL):
            continue
        found |= wanted.intersection(str(item) for item in listed)
    return found


def _notice_names(storage: Storage) -> list[str]:
    """The names of the eviction notices in ``usage/evicting/`` (the folder may not exist).

    On an object store a folder is a key prefix, and listing one that holds nothing
    costs two requests (the store's client then lists its parent, to tell a missing
    folder from a file). ``usage/`` exists whenever a reader asks (its own record was
    just written there), so it is listed instead, in one request: ``evicting`` is among
    its names exactly when some notice exists, and only then is it listed too.
    """
    folder = storage.join(_USAGE, _EVICTING)
    if storage.object_store and _EVICTING not in storage.listdir(storage.join(_USAGE)):
        return []
    return storage.listdir(folder)


@dataclass(frozen=True)
class _Record:
    path: str
    owner: Owner | None
    keys: dict[str, float]  # key -> when it was recorded
    ended: float | None
    written: float | None


def _records(storage: Storage) -> Iterator[_Record]:
    folder = storage.join(_USAGE)
    for name in storage.listdir(folder):
        if name in (_EVICTING, _SUMMARY):
            continue
        path = storage.child(folder, name)
        try:
            text = storage.read_bytes(path).decode(errors="replace")
        except (FileNotFoundError, IsADirectoryError):
            continue
        lines = text.split("\n")
        complete = lines[:-1]  # the last piece has no newline yet: being written
        header = parse_object(complete[0].encode()) if complete else None
        owner = Owner.from_json(header.get("owner")) if header is not None else None
        ended: float | None = None
        keys: dict[str, float] = {}
        for line in complete[1:]:
            first, _, moment = line.partition(" ")
            with contextlib.suppress(ValueError):
                if first == _ENDED:
                    ended = float(moment)
                elif is_fingerprint(first):
                    keys[first] = float(moment)
        yield _Record(path, owner, keys, ended, storage.newest_mtime(path))


def _is_live(record: _Record, foreign_ttl: float) -> bool:
    if record.ended is not None:
        return False
    if record.owner is None:  # being created, or garbage: judge by its age
        return record.written is None or time.time() - record.written <= foreign_ttl
    if record.owner.is_local:
        return not record.owner.is_dead()
    return record.written is None or time.time() - record.written <= foreign_ttl


def pinned_keys(layout: Layout, *, foreign_ttl: float = DEFAULT_FOREIGN_TTL) -> set[str]:
    """Every key a live process reads: its usage record names it, or it is open here.

    This process's own record is replaced by what it holds right now (it may name
    entries since closed).
    """
    pinned = _RECORDS.held_here(layout.storage)
    me = current_owner()
    for record in _records(layout.storage):
        if record.owner == me:
            continue
        if _is_live(record, foreign_ttl):
            pinned.update(record.keys)
    return pinned


def usage_times(layout: Layout) -> dict[str, float]:
    """When each key was last read, as far as usage records tell (Unix time)."""
    times = _summary(layout.storage)
    for record in _records(layout.storage):
        _note_times(times, record)
    return times


def fold_ended(layout: Layout, *, foreign_ttl: float = DEFAULT_FOREIGN_TTL) -> None:
    """Fold the records of ended and dead processes into ``usage/last-used.json``; remove them.

    gc calls it: what readers recorded becomes the last-use times it evicts by.
    """
    storage = layout.storage
    done = [record for record in _records(storage) if not _is_live(record, foreign_ttl)]
    if not done:
        return
    times = _summary(storage)
    for record in done:
        _note_times(times, record)
    existing = set(layout.entry_keys())
    kept = {key: moment for key, moment in times.items() if key in existing}
    storage.replace_bytes(storage.join(_USAGE, _SUMMARY), dumps(kept))
    for record in done:
        storage.remove_file(record.path)


def _note_times(times: dict[str, float], record: _Record) -> None:
    for key, moment in record.keys.items():
        times[key] = max(times.get(key, 0.0), moment)


def _summary(storage: Storage) -> dict[str, float]:
    try:
        value = parse_object(storage.read_bytes(storage.join(_USAGE, _SUMMARY)))
    except FileNotFoundError:
        return {}
    if value is None:
        return {}
    return {k: float(v) for k, v in value.items() if isinstance(v, int | float)}
