"""Read-only layers: stores read beneath the one a `CacheStore` writes (``read_from=``).

A development store layered over production's reads production's entries where
they are, without copying them, and writes only to itself:

- a lookup (and a manifest read) tries the written store, then each layer in order;
- an entry of a layer counts as held by the store (`CacheStore.holds`), so what is
  stored references it instead of copying it;
- nothing is ever written to a layer: no entry, lock, usage record or quarantine
  move. A damaged entry there is reported (`CacheCorruptionWarning`) and absent
  from then on in this process, so it is computed again into the written store;
- a layer whose root is gone (at start, or when a lookup misses or a read fails
  there) raises `CacheStoreUnavailableError` naming it.

Nothing pins an entry of a store this process may not write, so that store's gc may
remove one meanwhile: a read of it then fails with `CacheEntryDamagedError` (its
files are checked against the manifest when first read, so never with wrong rows),
and what computed it computes it again into the written store.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Iterator, Mapping, MutableSet, Sequence
from dataclasses import dataclass

from dagster_ds.cache._entry import CacheEntry
from dagster_ds.cache._json import JSONValue
from dagster_ds.cache._layout import MANIFEST, Layout
from dagster_ds.cache._lookup import Corrupt, Reader
from dagster_ds.cache._manifest import Manifest
from dagster_ds.cache._storage import Storage, open_storage
from dagster_ds.cache._usage import read_manifest
from dagster_ds.cache._verify import ChecksumPolicy

#: The layers found present in this process (`Storage.identity`).
_FOUND: set[str] = set()

_MASKED = "masked"


class Masks(MutableSet[str]):
    """Keys of read-only entries found damaged: absent beneath the written store from then on.

    Kept in the written store, one empty file per key (``masked/<key>``), so that later
    processes compute them there too instead of reading the damage again; read once per
    process. The written store's own entries are not affected. Removing a file there
    (after the read-only store's owner repaired the entry) reads it again.
    """

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._lock = threading.Lock()
        self._keys = set(storage.listdir(storage.join(_MASKED)))

    def __reduce__(self) -> tuple[object, ...]:
        # Sent to another process with an entry (a worker given a shard): its own masks.
        return _masks, (self._storage,)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._keys

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(sorted(self._keys))

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)

    def add(self, value: str) -> None:
        with self._lock:
            if value in self._keys:
                return
            self._keys.add(value)
        folder = self._storage.join(_MASKED)
        self._storage.makedirs(folder)
        self._storage.write_bytes(self._storage.child(folder, value), b"", durable=False)

    def discard(self, value: str) -> None:
        with self._lock:
            self._keys.discard(value)


#: The masks of each written store (by `Storage.identity`), read once per process.
_MASKS: dict[str, Masks] = {}
_masks_lock = threading.Lock()


def _masks(storage: Storage) -> Masks:
    with _masks_lock:
        masks = _MASKS.get(storage.identity)
        if masks is None:
            masks = _MASKS[storage.identity] = Masks(storage)
        return masks


@dataclass(frozen=True)
class Layers:
    """The read-only stores beneath a written one, in lookup order (may be none)."""

    readers: tuple[Reader, ...]
    #: The fsspec options each layer was opened with (the same for all).
    storage_options: Mapping[str, object] | None = None

    @classmethod
    def open(
        cls,
        roots: Sequence[str | os.PathLike[str]],
        storage_options: Mapping[str, object] | None,
        checksums: ChecksumPolicy,
        *,
        above: Storage,
    ) -> Layers:
        """The layers at ``roots``, each checked to exist.

        Raises:
            CacheStoreUnavailableError: A root does not exist.
            ValueError: A root is the written store's (``above``) or given twice.
        """
        readers: list[Reader] = []
        seen = {above.identity}
        masks = _masks(above) if roots else None
        for root in roots:
            storage = open_storage(root, storage_options or None, fsync=False)
            if storage.identity in seen:
                raise ValueError(
                    f"read_from={[os.fspath(r) for r in roots]!r} names {storage.url!r} twice,"
                    f" or the store written ({above.url!r}): each store read beneath it once"
                )
            seen.add(storage.identity)
            assert masks is not None
            reader = Reader(Layout(storage), checksums, True, read_only=True, damaged=masks)
            if storage.identity not in _FOUND:  # once per process; misses check again
                reader.check_present()
                _FOUND.add(storage.identity)
            readers.append(reader)
        return cls(tuple(readers), storage_options)

    @property
    def roots(self) -> tuple[str, ...]:
        """Each layer's root as given (path or URL)."""
        return tuple(reader.layout.storage.url for reader in self.readers)

    def lookup(self, key: str) -> CacheEntry | None:
        """The entry under ``key`` in the first layer holding it intact, or None."""
        for reader in self.readers:
            entry = reader.open(key)
            if entry is not None:
                return entry
            reader.check_present()
        return None

    def manifest(self, key: str) -> Manifest | None:
        """The manifest of ``key`` in the first layer holding it (one read each), or None."""
        for reader in self.readers:
            if key in reader.damaged:
                continue
            read = read_manifest(reader.layout, key)
            if read is not None and read[0].fingerprint == key:
                return read[0]
            reader.check_present()
        return None

    def known(
        self, key: str, manifest: Mapping[str, JSONValue], above: Reader
    ) -> CacheEntry | None:
        """The entry ``manifest`` describes, in the store written (``above``) or a layer.

        A record embedding it does not say which store holds it: the first one whose
        ``objects/`` has ``key`` (a stat, or a HEAD on an object store), the last
        layer without asking. A wrong guess (the entry was since recomputed elsewhere)
        fails the first read with `CacheEntryDamagedError`, never with wrong rows.
        """
        candidates = (above, *self.readers)
        for reader in candidates[:-1]:
            if reader.layout.storage.exists(reader.layout.entry_file(key, MANIFEST)):
                return reader.known(key, manifest)
        return candidates[-1].known(key, manifest)

    def reader_of(self, entry: CacheEntry) -> Reader | None:
        """The reader of the layer ``entry`` belongs to, or None."""
        for reader in self.readers:
            if entry.in_store(reader.layout.storage.url):
                return reader
        return None

    def check(self, entries: Collection[CacheEntry], policy: ChecksumPolicy) -> bool:
        """Whether layer ``entries`` look intact (a stat per file locally; see check_entries).

        A damaged one is reported and absent from then on; nothing is moved.
        """
        intact = True
        for entry in entries:
            reader = self.reader_of(entry)
            if reader is not None and entry.key in reader.damaged:
                intact = False
            if reader is None or not reader.layout.storage.is_local:
                continue
            found = reader.inspect(entry.key, policy, reading=False)
            if isinstance(found, Corrupt):
                reader.quarantine(entry.key, found, warn=True)
            if found is None:
                reader.check_present()
            intact = intact and not (found is None or isinstance(found, Corrupt))
        return intact
