"""CacheEntry: a published entry, held open by a reader lease, its files checked when read."""

from __future__ import annotations

import datetime
import io
from collections.abc import Callable
from types import TracebackType
from typing import cast

from dagster_ds.cache._json import JSONValue, copy_json
from dagster_ds.cache._layout import Layout
from dagster_ds.cache._leases import Lease
from dagster_ds.cache._manifest import FileRecord, Manifest
from dagster_ds.errors import CacheFileNotFoundError


class CacheEntry:
    """A published cache entry: its manifest and read access to its files.

    Returned by `CacheStore.lookup`, `CacheStore.get_or_create` and
    `EntryWriter.entry`, always published. Each data file is checked when it is
    first read (`open`, `local_path`): its size always, its checksum per the
    store's policy; a damaged one raises `CacheEntryDamagedError` (and the entry
    is quarantined). The entry holds a reader lease, so `CacheStore.gc` never
    evicts it once read; the lease ends with `close` (or ``with entry:``), when
    the entry is garbage-collected, or at interpreter exit. Keep the entry alive
    as long as you use its files, for example next to a memory map of `local_path`.

    Example:
        >>> store = CacheStore("memory://entry-doc")
        >>> with store.writer("0" * 32, metadata={"num_rows": 2}) as w:
        ...     w.write_bytes("data-00000-of-00001.arrow", b"...")
        >>> with store.lookup("0" * 32) as entry:
        ...     entry.files, entry.metadata["num_rows"], entry.open(entry.files[0]).read()
        (('data-00000-of-00001.arrow',), 2, b'...')
    """

    def __init__(
        self,
        layout: Layout,
        key: str,
        manifest: Manifest,
        lease: Lease,
        check: Callable[[CacheEntry, str], None],
    ) -> None:
        self._layout = layout
        self._key = key
        self._manifest = manifest
        self._lease = lease
        self._check = check

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the dataset this entry holds."""
        return self._manifest.fingerprint

    @property
    def key(self) -> str:
        """The entry's folder name: its fingerprint, or a random name when caching is off."""
        return self._key

    @property
    def manifest(self) -> dict[str, JSONValue]:
        """The parsed manifest.json (a copy): fingerprint, files, created, metadata."""
        return cast(dict[str, JSONValue], copy_json(self._manifest.to_json()))

    @property
    def metadata(self) -> dict[str, JSONValue]:
        """The caller's metadata, as given to `CacheStore.writer` (a copy)."""
        return cast(dict[str, JSONValue], copy_json(self._manifest.metadata))

    def metadata_item(self, name: str, default: JSONValue = None) -> JSONValue:
        """One item of `metadata` (a copy), without copying the rest.

        Example:
            >>> store = CacheStore("memory://item-doc")
            >>> store.get_or_create("6" * 32, lambda w: None, metadata={"n": 1}).metadata_item("n")
            1
        """
        return copy_json(self._manifest.metadata.get(name, default))

    @property
    def files(self) -> tuple[str, ...]:
        """Names of the entry's data files, sorted."""
        return tuple(record.name for record in self._manifest.files)

    @property
    def size(self) -> int:
        """Total size of the data files in bytes."""
        return self._manifest.size

    @property
    def created(self) -> datetime.datetime:
        """When the entry was published (UTC)."""
        return self._manifest.created_at

    @property
    def url(self) -> str:
        """Where the entry's folder is (a path, or a path inside the store's filesystem)."""
        return self._layout.entry(self._key)

    def in_store(self, url: str) -> bool:
        """Whether the entry belongs to the store whose root is ``url``."""
        return self._layout.storage.url == url

    @property
    def closed(self) -> bool:
        """Whether `close` was called (the lease is released)."""
        return self._lease.released

    def _record(self, name: str) -> FileRecord:
        record = self._manifest.record(name)
        if record is None:
            raise CacheFileNotFoundError(
                f"Cache entry {self._key!r} has no file {name!r}; its files are "
                f"{list(self.files)!r}."
            )
        return record

    def _path(self, name: str) -> str:
        """The path of file ``name``, checked (and the use recorded) before it is read."""
        self._record(name)
        self._check(self, name)
        return self._layout.entry_file(self._key, name)

    def local_path(self, name: str) -> str | None:
        """The OS path of a data file, for memory-mapping; None when the store is not local.

        Raises:
            CacheFileNotFoundError: The entry has no such file.
            CacheEntryDamagedError: The file is missing or damaged.
        """
        if not self._layout.storage.is_local:  # nothing is read through None: `open` checks
            self._record(name)
            return None
        return self._layout.storage.local_path(self._path(name))

    def open(self, name: str) -> io.BufferedIOBase:
        """Open a data file for reading (binary).

        Raises:
            CacheFileNotFoundError: The entry has no such file.
            CacheEntryDamagedError: The file is missing or damaged.
        """
        path = self._path(name)  # its size checked (against the manifest's) just now
        record = self._manifest.record(name)
        return self._layout.storage.open_read(path, None if record is None else record.size)

    def close(self) -> None:
        """Release the reader lease (idempotent); gc may then evict the entry."""
        self._lease.release()

    def __enter__(self) -> CacheEntry:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CacheEntry):
            return NotImplemented
        return (self._layout.storage.url, self._key, self._manifest) == (
            other._layout.storage.url,
            other._key,
            other._manifest,
        )

    def __hash__(self) -> int:
        return hash((self._layout.storage.url, self._key, self._manifest.created))

    def __repr__(self) -> str:
        return (
            f"CacheEntry(fingerprint={self.fingerprint!r}, files={len(self.files)}, "
            f"size={self.size}, url={self.url!r})"
        )
