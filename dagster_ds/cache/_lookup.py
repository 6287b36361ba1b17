"""Reading an entry: its manifest at lookup, each file's checks at its first read, quarantine.

An entry opened as a record embeds it (`Reader.known`) reads nothing, so a record
naming an entry quarantined since would keep vouching for it until a read failed.
On stores that are not local (where a lookup checks no file) `known` therefore
consults the names in ``quarantine/``, listed once per `QUARANTINE_LISTING_TTL`
in a process: an entry quarantined after the manifest's creation is absent, and
whoever needs it computes it again.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Mapping, MutableSet
from dataclasses import dataclass, field

from dagster_ds.cache._entry import CacheEntry
from dagster_ds.cache._json import JSONValue
from dagster_ds.cache._layout import MANIFEST, Layout, is_fingerprint, quarantined_at
from dagster_ds.cache._leases import Lease, ReadOnlyLease
from dagster_ds.cache._manifest import Manifest, ManifestError
from dagster_ds.cache._removal import quarantine
from dagster_ds.cache._verify import ChecksumPolicy, check_file, check_files, check_stamps
from dagster_ds.errors import (
    CacheCorruptionWarning,
    CacheEntryDamagedError,
    CacheFormatError,
    CacheStoreUnavailableError,
)

#: Seconds a listing of ``quarantine/`` answers `Reader.known` for, in one process.
QUARANTINE_LISTING_TTL = 60.0


class _Quarantined:
    """When each key of a store was last quarantined, as listed (or done) in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listings: dict[str, tuple[float, dict[str, float]]] = {}

    def since(self, layout: Layout) -> dict[str, float]:
        """Key -> when it was last quarantined (Unix time): one listing per TTL.

        The root is listed first, one request, where listing a missing
        ``quarantine/`` would cost two on an object store.
        """
        identity = layout.storage.identity
        with self._lock:
            listed = self._listings.get(identity)
        if listed is not None and time.monotonic() - listed[0] <= QUARANTINE_LISTING_TTL:
            return listed[1]
        storage = layout.storage
        times: dict[str, float] = {}
        if "quarantine" in storage.listdir(storage.root):
            for name in storage.listdir(layout.quarantine):
                key, moment = name[:32], quarantined_at(name)
                if moment is not None and is_fingerprint(key):
                    times[key] = max(times.get(key, 0.0), moment)
        with self._lock:
            self._listings[identity] = (time.monotonic(), times)
        return times

    def note(self, layout: Layout, key: str) -> None:
        """``key`` was quarantined just now, by this process."""
        with self._lock:
            listed = self._listings.get(layout.storage.identity)
            if listed is not None:
                listed[1][key] = time.time()


_QUARANTINED = _Quarantined()


@dataclass(frozen=True)
class Corrupt:
    problems: list[str]
    manifest: bytes  # the manifest.json judged, to quarantine that entry and no other


#: An entry as inspected: fine (manifest and its bytes), corrupt, or absent.
Inspection = tuple[Manifest, bytes] | Corrupt | None


@dataclass(frozen=True)
class Reader:
    layout: Layout
    policy: ChecksumPolicy
    #: False when entries are published under random names (caching off).
    keys_are_fingerprints: bool
    #: True for a store read beneath the written one (``read_from=``): this reader writes
    #: nothing there (no usage record, no quarantine move); a damaged entry is only
    #: reported, and counts as absent from then on (``damaged``: the written store's
    #: masks, see `dagster_ds.cache._layers.Masks`).
    read_only: bool = False
    damaged: MutableSet[str] = field(default_factory=set[str])

    def lease(self, key: str) -> Lease:
        """A new lease on ``key`` (held in memory; recorded when its data is first read)."""
        if self.read_only:
            return ReadOnlyLease(self.layout.storage, key)
        return Lease(self.layout, key)

    def check_present(self) -> None:
        """Raise if this read-only store's root is gone (a miss there may mean it vanished).

        Raises:
            CacheStoreUnavailableError: The root does not exist (any more).
        """
        storage = self.layout.storage
        if not self.read_only or storage.exists(storage.root):
            return
        raise CacheStoreUnavailableError(
            f"The read-only store {storage.url!r} (read_from=) is gone: its root does not"
            " exist. Nothing was written to it. Make it reachable again (mount it, check the"
            " URL and credentials) or remove it from read_from, then run again."
        )

    def open(self, key: str) -> CacheEntry | None:
        """The entry under ``key`` (one manifest read), holding a new lease; None if absent.

        Data files are checked when they are read (`check_read`); locally they are
        also stat-ed now, and a damaged entry is quarantined and reported absent.
        """
        if key in self.damaged:
            return None
        lease = self.lease(key)
        try:
            if lease.evicting():
                lease.release()
                return None
            found = self.inspect(key, self.policy, reading=self.policy == "always")
            if isinstance(found, Corrupt):
                self.quarantine(key, found, warn=True)
                found = None
            if found is None:
                lease.release()
                return None
            return CacheEntry(self.layout, key, found[0], lease, self.check_read)
        except BaseException:
            lease.release()
            raise

    def known(self, key: str, manifest: Mapping[str, JSONValue]) -> CacheEntry | None:
        """The entry under ``key`` as ``manifest`` records it (a copy kept elsewhere).

        Nothing is read but, on a store that is not local, the listing of
        ``quarantine/`` (once per `QUARANTINE_LISTING_TTL`): the files are checked
        when they are read, like any entry's. None if ``manifest`` is not a
        manifest of this format for ``key``, or the entry was quarantined since.
        """
        try:
            parsed = Manifest.from_json(manifest, where=self.layout.entry(key))
        except (ManifestError, CacheFormatError):
            return None
        if (self.keys_are_fingerprints and parsed.fingerprint != key) or key in self.damaged:
            return None
        if not self.layout.storage.is_local:  # (locally, a lookup stats the files)
            quarantined = _QUARANTINED.since(self.layout).get(key)
            if quarantined is not None and quarantined >= parsed.created_at.timestamp():
                return None  # quarantined after the record was made: gone
        lease = self.lease(key)
        if lease.evicting():
            lease.release()
            return None
        return CacheEntry(self.layout, key, parsed, lease, self.check_read)

    def check_read(self, entry: CacheEntry, name: str) -> None:
        """Before ``entry``'s file ``name`` is read: record the use, check the file.

        Raises:
            CacheEntryDamagedError: The entry is being evicted, or the file is
                missing or damaged (the entry is then quarantined, with a warning).
        """
        manifest = entry._manifest  # pyright: ignore[reportPrivateUsage]
        record = manifest.record(name)
        assert record is not None
        if not entry._lease.pin():  # pyright: ignore[reportPrivateUsage]
            raise CacheEntryDamagedError(
                f"The cache entry {entry.key!r} in {self.layout.storage.url!r} was evicted"
                " while this process held it unread: it will be computed again."
            )
        problem = check_file(self.layout, entry.key, record, self.policy)
        if problem is None:
            return
        judged = manifest.to_bytes()
        if self._published_manifest(entry.key) != judged:
            self.check_present()
            raise CacheEntryDamagedError(
                f"The cache entry {entry.key!r} in {self.layout.storage.url!r} was removed or"
                " replaced by another process while this one held it unread: it will be"
                " read or computed again."
            )
        corrupt = Corrupt([problem], judged)
        where = self.quarantine(entry.key, corrupt, warn=True)
        if where is None:
            raise CacheEntryDamagedError(
                f"The cache entry {entry.key!r} in the read-only store"
                f" {self.layout.storage.url!r} is damaged ({problem}); it was left there and"
                " will be computed again into the store written."
            )
        raise CacheEntryDamagedError(
            f"The cache entry {entry.key!r} in {self.layout.storage.url!r} is damaged"
            f" ({problem}); it was moved to {where!r} and will be computed again."
        )

    def _published_manifest(self, key: str) -> bytes | None:
        try:
            return self.layout.storage.read_bytes(self.layout.entry_file(key, MANIFEST))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def inspect(self, key: str, policy: ChecksumPolicy, *, reading: bool = True) -> Inspection:
        """Read an entry's manifest; check its files per ``policy``.

        ``reading``: check every file as for a read; else only what a lookup checks
        (`check_stamps`: stats, locally).

        Checks twice before calling an entry corrupt: it may have been replaced meanwhile.
        """
        previous: bytes | None = None
        problems: list[str] = []
        data = b""
        for _ in range(2):
            try:
                data = self.layout.storage.read_bytes(self.layout.entry_file(key, MANIFEST))
            except (FileNotFoundError, NotADirectoryError):
                return None
            try:
                manifest = Manifest.from_bytes(data, where=self.layout.entry(key))
            except ManifestError as error:
                problems = [str(error)]
            else:
                problems = self._problems(key, manifest, policy, reading)
                if not problems:
                    return manifest, data
            if data == previous:
                break
            previous = data
        return Corrupt(problems, data)

    def _problems(
        self, key: str, manifest: Manifest, policy: ChecksumPolicy, reading: bool
    ) -> list[str]:
        if self.keys_are_fingerprints and manifest.fingerprint != key:
            return [f"manifest.json is for fingerprint {manifest.fingerprint!r}"]
        if not reading:
            return check_stamps(self.layout, key, manifest, policy)
        return check_files(self.layout, key, manifest, policy)

    def quarantine(self, key: str, corrupt: Corrupt, *, warn: bool) -> str | None:
        """Move a corrupt entry aside (with a warning); where to, or None if not moved.

        A read-only store's entry is not moved: it is reported, and absent from now on
        in this process, so that it is computed again into the store written.
        """
        if self.read_only:
            self.damaged.add(key)
            warnings.warn(
                f"Cache entry {key!r} in the read-only store {self.layout.storage.url!r}"
                f" (read_from=) is corrupt: {'; '.join(corrupt.problems)}. It was left in"
                " place (nothing is written to a read-only store) and will be computed again"
                " into the store written. Tell the owner of that store to run"
                " `dagster-ds cache verify` on it.",
                CacheCorruptionWarning,
                stacklevel=4,
            )
            return None
        where = quarantine(self.layout, key, corrupt.manifest)
        _QUARANTINED.note(self.layout, key)
        if warn:
            warnings.warn(
                f"Cache entry {key!r} in {self.layout.storage.url!r} is corrupt: "
                f"{'; '.join(corrupt.problems)}. It was moved to {where!r} and will be "
                "recomputed. If this recurs, check the disk or storage holding the cache, "
                "then run `dagster-ds cache verify`.",
                CacheCorruptionWarning,
                stacklevel=4,
            )
        return where
