"""EntryWriter: one entry under construction in ``tmp/``.

Files are written into a private folder ``tmp/<fp>-<owner>/``. Each file is
hashed (xxh3-128) as it is written and synced when closed (fsynced if the
store asks for it). Committing writes
manifest.json and hands the folder to the store to publish (one atomic rename
on local folders); aborting removes the folder. Nothing under ``objects/``
changes until the commit, so an exception or a killed process leaves only
``tmp/`` garbage.
"""

from __future__ import annotations

import contextlib
import errno
import io
import re
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Literal

import xxhash

from dagster_ds.cache._json import JSONValue
from dagster_ds.cache._layout import RESERVED_NAMES
from dagster_ds.cache._manifest import FileRecord, Manifest, check_metadata, now_iso
from dagster_ds.cache._storage import Storage
from dagster_ds.errors import CacheError, CacheStorageError, CacheWriterError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from dagster_ds.cache._entry import CacheEntry

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=-]{0,199}")

#: Publishes a committed writer: (writer's folder, manifest, manifest bytes) -> entry.
Publisher = Callable[[str, Manifest, bytes], "CacheEntry"]


def storage_error(path: str, error: OSError) -> CacheStorageError:
    """The error that says which cache file could not be written, and what to do."""
    hint = (
        " The disk is full: free space (dagster-ds cache gc --max-size ...) or move the cache."
        if error.errno == errno.ENOSPC
        else ""
    )
    return CacheStorageError(
        error.errno or 0,
        f"Could not write the cache file {path!r}: {error.strerror or error}.{hint} Nothing "
        "was published; what was written is removed, and earlier entries are intact.",
    )


class _HashingFile(io.BufferedIOBase):
    """A write-only file that hashes what goes through it and fsyncs on close."""

    def __init__(
        self,
        raw: io.BufferedIOBase,
        storage: Storage,
        name: str,
        on_close: Callable[[FileRecord], None],
        path: str = "",
    ) -> None:
        super().__init__()
        self._raw = raw
        self._storage = storage
        self._name = name
        self._path = path or name
        self._on_close: Callable[[FileRecord], None] | None = on_close
        self._hasher = xxhash.xxh3_128()
        self._size = 0

    def writable(self) -> bool:
        return True

    def write(self, buffer: ReadableBuffer, /) -> int:
        if self.closed:
            raise ValueError(f"write to closed cache file {self._name!r}")
        view = memoryview(buffer).cast("B")
        try:
            self._raw.write(view)
        except OSError as error:
            raise storage_error(self._path, error) from error
        self._hasher.update(view)
        self._size += len(view)
        return len(view)

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        if not self._raw.closed:
            self._raw.flush()

    def close(self) -> None:
        if self.closed:
            return
        try:
            on_close, self._on_close = self._on_close, None
            if on_close is not None:
                try:
                    self._storage.sync(self._raw)
                    self._raw.close()
                except OSError as error:
                    raise storage_error(self._path, error) from error
                on_close(FileRecord(self._name, self._size, self._hasher.hexdigest()))
        finally:
            with contextlib.suppress(OSError):  # (already reported, or being discarded)
                self._raw.close()
            super().close()

    def discard(self) -> None:
        """Close without recording the file (the entry is being aborted)."""
        self._on_close = None
        self.close()


class EntryWriter:
    """Writes one cache entry; published when its ``with`` block exits without error.

    Get one from `CacheStore.writer` (or as the argument of
    `CacheStore.get_or_create`'s ``build``). Write each data file through
    `open`; on leaving the block the files are fsynced, their sizes and
    xxh3-128 checksums go into manifest.json with the metadata, and the entry
    is published atomically. If the block raises, nothing is published.

    Example:
        >>> import pyarrow as pa
        >>> table = pa.table({"text": ["a", "bb"]})
        >>> store = CacheStore("memory://writer-doc")
        >>> with store.writer("1" * 32, metadata={"num_rows": 2}) as w:
        ...     with w.open("data-00000-of-00001.arrow") as f:
        ...         with pa.ipc.new_file(f, table.schema) as ipc:
        ...             ipc.write_table(table)
        >>> w.entry.files
        ('data-00000-of-00001.arrow',)
    """

    def __init__(
        self,
        fingerprint: str,
        metadata: dict[str, JSONValue],
        storage: Storage,
        folder: str,
        publish: Publisher,
    ) -> None:
        self._fingerprint = fingerprint
        self._metadata = metadata
        self._storage = storage
        self._folder = folder
        self._publish = publish
        self._lock = threading.Lock()
        self._open: dict[str, _HashingFile] = {}
        self._records: dict[str, FileRecord] = {}
        self._state: Literal["writing", "committed", "aborted"] = "writing"
        self._entry: CacheEntry | None = None
        storage.makedirs(folder)

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the entry being written."""
        return self._fingerprint

    @property
    def files(self) -> tuple[str, ...]:
        """Names of the files written (closed) so far, sorted."""
        with self._lock:
            return tuple(sorted(self._records))

    @property
    def entry(self) -> CacheEntry:
        """The published entry, once the ``with`` block has exited without error.

        Raises:
            CacheWriterError: The entry is not published (yet, or it was aborted).
        """
        if self._entry is None:
            raise CacheWriterError(
                f"The cache entry {self._fingerprint!r} is {self._state}, not published: "
                "read .entry after the `with store.writer(...)` block has exited without error."
            )
        return self._entry

    def open(self, name: str) -> io.BufferedIOBase:
        """A new binary file of the entry, for writing (an Arrow IPC writer can write into it).

        Args:
            name: A plain file name such as ``"data-00000-of-00001.arrow"``:
                letters, digits, ``.``, ``_``, ``-`` and ``=``, not starting
                with a dot; not ``manifest.json`` or ``last-used``.

        Raises:
            CacheWriterError: The name is invalid or already used, or the writer is closed.
        """
        with self._lock:
            self._check_writing()
            if (
                not _NAME.fullmatch(name)
                or name in RESERVED_NAMES
                or name.startswith(RESERVED_NAMES)
            ):
                raise CacheWriterError(
                    f"Invalid cache file name {name!r}: use letters, digits, '.', '_', '-', '=' "
                    "(at most 200, not starting with '.' or '-'), not 'manifest.json' or "
                    "'last-used'; for example 'data-00000-of-00001.arrow'."
                )
            if name in self._open or name in self._records:
                raise CacheWriterError(
                    f"The cache file {name!r} of entry {self._fingerprint!r} was already opened; "
                    "each file is written once, through a single open()."
                )
            path = self._storage.child(self._folder, name)
            try:
                raw = self._storage.open_write(path)
            except OSError as error:
                raise storage_error(path, error) from error
            file = _HashingFile(raw, self._storage, name, self._closed, path)
            self._open[name] = file
            return file

    def update_metadata(self, values: Mapping[str, object]) -> None:
        """Add to the entry's metadata what is known only once it is written (``num_rows``...).

        Raises:
            CacheMetadataError: ``values`` is not JSON data.
            CacheWriterError: The writer is closed.
        """
        checked = check_metadata(self._fingerprint, values)
        with self._lock:
            self._check_writing()
            self._metadata = {**self._metadata, **checked}

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write a whole file at once (`open`, write, close)."""
        with self.open(name) as file:
            file.write(data)

    def _closed(self, record: FileRecord) -> None:
        with self._lock:
            self._open.pop(record.name, None)
            if self._state == "writing":
                self._records[record.name] = record

    def _check_writing(self) -> None:
        if self._state != "writing":
            raise CacheWriterError(
                f"The writer of cache entry {self._fingerprint!r} is {self._state}; "
                "open a new one with store.writer(...)."
            )

    def commit(self) -> CacheEntry:
        """Close the files, write manifest.json and publish (done by leaving the ``with`` block)."""
        with self._lock:
            self._check_writing()
            still_open = list(self._open.values())
        try:
            for file in still_open:
                file.close()
            with self._lock:
                records = tuple(self._records[name] for name in sorted(self._records))
                self._state = "committed"
            manifest = Manifest(self._fingerprint, records, now_iso(), self._metadata)
            try:
                self._entry = self._publish(self._folder, manifest, manifest.to_bytes())
            except CacheError:
                raise
            except OSError as error:
                raise storage_error(self._folder, error) from error
        except BaseException:
            self._state = "writing"
            self.abort()
            raise
        return self._entry

    def abort(self) -> None:
        """Discard everything written; nothing is published (done when the block raises)."""
        with self._lock:
            if self._state != "writing":
                return
            self._state = "aborted"
            still_open = list(self._open.values())
            self._open.clear()
        for file in still_open:
            file.discard()
        self._storage.remove_tree(self._folder)

    def __enter__(self) -> EntryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def __repr__(self) -> str:
        return f"EntryWriter(fingerprint={self._fingerprint!r}, files={list(self.files)!r})"
