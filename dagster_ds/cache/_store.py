"""CacheStore: the content-addressed store of dataset results."""

from __future__ import annotations

import datetime
import functools
import os
import secrets
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from contextlib import contextmanager

from dagster_ds.cache._entry import CacheEntry
from dagster_ds.cache._gc import DEFAULT_GRACE, GcReport, clean_tmp, collect, remove_dead_writers
from dagster_ds.cache._hints import read_ref, recorded, recorded_manifest, write_ref
from dagster_ds.cache._json import JSONValue
from dagster_ds.cache._layers import Layers
from dagster_ds.cache._layout import (
    MANIFEST,
    Layout,
    check_fingerprint,
    default_cache_root,
)
from dagster_ds.cache._leases import DEFAULT_FOREIGN_TTL
from dagster_ds.cache._locks import LOCK_MODES, EntryLock, LockMode, make_lock
from dagster_ds.cache._lookup import Corrupt, Reader
from dagster_ds.cache._manifest import Manifest, check_metadata
from dagster_ds.cache._publish import publish, writer_folder
from dagster_ds.cache._removal import Eviction, evict
from dagster_ds.cache._storage import Storage, open_storage
from dagster_ds.cache._switch import cache_root, current_read_from, current_root, temporary_root
from dagster_ds.cache._usage import EntryInfo, describe_all, read_manifest
from dagster_ds.cache._verify import CHECKSUM_POLICIES, ChecksumPolicy, VerifyReport
from dagster_ds.cache._writer import EntryWriter
from dagster_ds.errors import CacheLockTimeoutError


class CacheStore:
    """The content-addressed store of dataset results, keyed by fingerprint.

    Layout under the root (a local folder or any fsspec URL)::

        objects/<fp[:2]>/<fp>/   data files, manifest.json (sizes, xxh3-128 checksums)
        tmp/                     entries being written (garbage if their writer died, removed
                                 by the next writer of that fingerprint on this host, or gc)
        quarantine/              corrupt entries, moved aside
        locks/                   per-fingerprint build locks
        usage/                   one usage record per process that read data, eviction notices
        refs/                    named pointers to the latest record of something (hints)

    Entries are written in ``tmp/`` and published atomically: one directory
    rename on local folders; on object stores manifest.json is written last
    and nothing without it exists. A lookup reads the manifest (and, locally,
    stats the files); each file is checked when it is first read: its size
    always, its checksum per ``checksums`` (see `ChecksumPolicy`). A corrupt
    entry is quarantined with a `CacheCorruptionWarning`: a miss at lookup,
    a `CacheEntryDamagedError` at read. Reading writes nothing per entry:
    the process's usage record (see `ls`, `gc`) is written once.

    Args:
        root: Local path, ``file://`` or any fsspec URL (``s3://bucket/cache``,
            ``memory://name``...). None: ``$DAGSTER_DS_CACHE`` or
            ``~/.cache/dagster_ds``, or, while caching is disabled
            (`disable_caching`), a per-process temporary folder.
        storage_options: fsspec options for ``root`` (credentials, endpoint...).
        filesystem: An fsspec filesystem to use as is; ``root`` is then a path in it.
        checksums: When a file's checksum is verified: ``"first-use"`` (its
            first read in this process, and whenever it changed), ``"always"``
            (every lookup and read), or ``"never"``. Sizes are always checked.
        lock_mode: ``"auto"`` / ``"flock"``: OS locks on local folders (released
            by the kernel if a builder dies), for build locks; ``"lease"``:
            heartbeat lease files, for folders shared by several hosts. Object
            stores always use lock records.
        lock_timeout: Seconds `get_or_create` waits for another builder of the
            same fingerprint; None waits as long as that builder is alive.
        stale_lock_timeout: Seconds after which a lease or lock record whose
            heartbeat stopped is broken.
        foreign_lease_ttl: Seconds a usage record from another host (whose
            process cannot be checked) protects its entries from gc after it
            was last written.
        random_names: Publish entries under random names, so lookups never
            hit (what caching off means). Implied when ``root`` is None and
            caching is disabled.
        fsync: Whether a local entry's files and folder are fsynced before it
            is published. None (default): only with ``checksums="never"``. An
            entry is recomputable, and a power loss ends every process, so the
            first-use checksum of the next one catches a file the loss tore
            (quarantine, recompute); fsync buys nothing more, and costs a few
            milliseconds per file.
        read_from: Stores read beneath this one, in order, and never written
            (production's store under a development one): a lookup that misses
            here tries each, and what they hold is referenced, not copied. No
            entry, lock, usage record or quarantine move is ever made in them
            (see `dagster_ds.cache._layers`). With ``root=None`` inside a
            `cache_root` block: that block's. Maintenance (`ls`, `verify`, `gc`,
            `remove`, `clean_tmp`) acts on this store only.
        read_from_options: fsspec options for the ``read_from`` stores.

    Example:
        >>> store = CacheStore("memory://doc")
        >>> fp = "0123456789abcdef0123456789abcdef"
        >>> entry = store.get_or_create(
        ...     fp, lambda w: w.write_bytes("data-00000-of-00001.arrow", b"..."),
        ...     metadata={"num_rows": 3},
        ... )
        >>> store.lookup(fp).metadata
        {'num_rows': 3}
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        storage_options: Mapping[str, object] | None = None,
        filesystem: object | None = None,
        checksums: ChecksumPolicy = "first-use",
        lock_mode: LockMode = "auto",
        lock_timeout: float | None = None,
        stale_lock_timeout: float = 60.0,
        foreign_lease_ttl: float = DEFAULT_FOREIGN_TTL,
        random_names: bool = False,
        fsync: bool | None = None,
        read_from: Sequence[str | os.PathLike[str]] = (),
        read_from_options: Mapping[str, object] | None = None,
    ) -> None:
        if root is None:
            if filesystem is not None:
                raise ValueError(
                    "CacheStore(filesystem=...) needs root=, a path in that filesystem"
                )
            temporary = temporary_root()
            chosen = current_root()
            if temporary is not None:
                root = temporary
            elif chosen is not None:
                root, storage_options = chosen[0], storage_options or chosen[1]
                if not read_from:
                    read_from, read_from_options = current_read_from()
            else:
                root = default_cache_root()
            random_names = random_names or temporary is not None
        if checksums not in CHECKSUM_POLICIES:
            raise ValueError(f"checksums={checksums!r}: use one of {CHECKSUM_POLICIES!r}")
        if lock_mode not in LOCK_MODES:
            raise ValueError(f"lock_mode={lock_mode!r}: use one of {LOCK_MODES!r}")
        if stale_lock_timeout <= 0:
            raise ValueError(f"stale_lock_timeout={stale_lock_timeout!r} must be positive")
        if fsync is None:
            fsync = checksums == "never"
        self._storage: Storage = open_storage(root, storage_options, filesystem, fsync=fsync)
        if lock_mode == "flock" and not self._storage.is_local:
            raise ValueError(
                f"lock_mode='flock' needs a local folder, not {self._storage.url!r}; "
                "object stores use lease records: leave lock_mode='auto'"
            )
        self._layout = Layout(self._storage)
        self._checksums: ChecksumPolicy = checksums
        self._lock_mode: LockMode = lock_mode
        self._lock_timeout = lock_timeout
        self._stale_lock_timeout = stale_lock_timeout
        self._foreign_lease_ttl = foreign_lease_ttl
        self._random_names = random_names
        self._reader = Reader(self._layout, checksums, keys_are_fingerprints=not random_names)
        self._options = dict(storage_options or {})
        self._layers = Layers.open(
            () if random_names else read_from, read_from_options, checksums, above=self._storage
        )

    @property
    def root(self) -> str:
        """The root as given (path or URL), or the one chosen by default."""
        return self._storage.url

    @property
    def read_from(self) -> tuple[str, ...]:
        """The stores read beneath this one and never written, in lookup order.

        Example:
            >>> CacheStore("memory://top-doc", read_from=["/tmp"]).read_from
            ('/tmp',)
        """
        return self._layers.roots

    @property
    def read_from_options(self) -> dict[str, object] | None:
        """The fsspec options of the ``read_from`` stores (None: none given)."""
        options = self._layers.storage_options
        return dict(options) if options else None

    @contextmanager
    def as_default(self) -> Generator[None]:
        """Make this store, with its ``read_from`` stores, the one `CacheStore()` uses in a block.

        Example:
            >>> import tempfile
            >>> store = CacheStore(tempfile.mkdtemp(), read_from=[tempfile.mkdtemp()])
            >>> with store.as_default():
            ...     CacheStore().read_from == store.read_from
            True
        """
        with cache_root(
            self.root,
            self._options or None,
            read_from=self.read_from,
            read_from_options=self.read_from_options,
        ):
            yield

    @property
    def state_dir(self) -> str:
        """A folder of this machine for what it remembers about the local files it reads.

        In the store (``state/``) when the store is local; else under
        ``~/.cache/dagster_ds/state``: a local file's stat means nothing elsewhere.

        Example:
            >>> CacheStore("/tmp/state-doc").state_dir
            '/tmp/state-doc/state'
        """
        if self.is_local:
            return self._storage.join("state")
        return os.path.join(os.path.expanduser("~"), ".cache", "dagster_ds", "state")

    @property
    def is_local(self) -> bool:
        """Whether the root is a local folder (atomic renames; files can be memory-mapped)."""
        return self._storage.is_local

    @property
    def random_names(self) -> bool:
        """Whether entries are published under random names (caching off): lookups never hit."""
        return self._random_names

    def __repr__(self) -> str:
        return f"CacheStore({self.root!r})"

    # -- reading ---------------------------------------------------------------------------

    def lookup(self, fingerprint: str) -> CacheEntry | None:
        """The published entry for ``fingerprint``, or None: one read of its manifest.

        Locally its files are also stat-ed: one of the wrong size, or rewritten
        since the entry was published and failing its checksum, makes the entry
        corrupt. A corrupt entry is moved to ``quarantine/`` with a
        `CacheCorruptionWarning`, and None is returned so the caller recomputes.
        Each file is checked again when read (see `CacheEntry`). The entry
        holds a reader lease until it is closed; nothing is written.

        Raises:
            InvalidFingerprintError: ``fingerprint`` is not 32 lowercase hex characters.
            CacheFormatError: The entry was written by a newer dagster_ds.

        Example:
            >>> CacheStore("memory://lookup-doc").lookup("f" * 32) is None
            True
        """
        key = check_fingerprint(fingerprint)
        if self._random_names:
            return None
        return self._recorded_entry(key) or self._reader.open(key) or self._layers.lookup(key)

    def manifest(self, fingerprint: str) -> Manifest | None:
        """What the entry for ``fingerprint`` records (its files' sizes, its metadata), or None.

        One read of its ``manifest.json``: no lease, no check of the data files and
        no record of use, so nothing here vouches for the data. For reports and
        records; read the data through `lookup`. None if the entry is absent, or its
        manifest unreadable or for another fingerprint (`lookup` then quarantines it).

        Raises:
            InvalidFingerprintError: ``fingerprint`` is not 32 lowercase hex characters.

        Example:
            >>> store = CacheStore("memory://manifest-doc")
            >>> _ = store.get_or_create("6" * 32, lambda w: w.update_metadata({"n": 1}))
            >>> store.manifest("6" * 32).metadata
            {'n': 1}
        """
        key = check_fingerprint(fingerprint)
        if self._random_names:
            return None
        read = read_manifest(self._layout, key)
        if read is None or read[0].fingerprint != key:
            return self._layers.manifest(key)
        return read[0]

    def described_entry(self, fingerprint: str) -> CacheEntry | None:
        """The entry for ``fingerprint`` as its manifest describes it, or None: one read.

        `manifest` then `known_entry`: no lease, no check of the data files and no
        record of use. For the metadata of an entry a record names (a stored
        version's); each file is checked if read, as for `lookup`.

        Example:
            >>> store = CacheStore("memory://described-doc")
            >>> _ = store.get_or_create("8" * 32, lambda w: w.update_metadata({"n": 2}))
            >>> store.described_entry("8" * 32).metadata_item("n")
            2
        """
        manifest = self.manifest(fingerprint)
        return self.known_entry(fingerprint, manifest.to_json()) if manifest is not None else None

    def known_entry(self, key: str, manifest: Mapping[str, JSONValue]) -> CacheEntry | None:
        """The entry under ``key`` as ``manifest`` (a copy of its `CacheEntry.manifest`) says.

        Reads nothing: a record that embeds its entries' manifests (a stored
        dataset, a transform's index) opens them all at the cost of its own read.
        Each file is checked when it is read, as for `lookup`; an entry removed
        meanwhile fails then with `CacheEntryDamagedError`. None if ``manifest``
        is not a manifest for ``key`` (or caching is off).

        Example:
            >>> store = CacheStore("memory://known-doc")
            >>> kept = store.get_or_create("7" * 32, lambda w: w.write_bytes("a", b"1")).manifest
            >>> store.known_entry("7" * 32, kept).open("a").read()
            b'1'
        """
        key = check_fingerprint(key)
        if self._random_names:
            return None
        if self._layers.readers:
            return self._layers.known(key, manifest, self._reader)
        return self._reader.known(key, manifest)

    @contextmanager
    def recorded(self, manifests: Mapping[str, Mapping[str, JSONValue]]) -> Generator[None]:
        """Within the block, lookups of the entries ``manifests`` name read nothing.

        `lookup` and `get_or_create` open them as `known_entry` does, in this thread,
        through any `CacheStore` of this root. For a computation that asks again for
        the entries a record embeds (a stored version of the same data, before a file
        was appended): a hint, never trusted for rows. Each file is checked when
        read; an entry gone since fails then with `CacheEntryDamagedError`, and is
        recomputed by whoever reads it.

        Example:
            >>> store = CacheStore("memory://recorded-doc")
            >>> kept = store.get_or_create("9" * 32, lambda w: None).manifest
            >>> with store.recorded({"9" * 32: kept}):
            ...     store.lookup("9" * 32).fingerprint == "9" * 32
            True
        """
        with recorded(self._storage, manifests):
            yield

    def _recorded_entry(self, key: str) -> CacheEntry | None:
        manifest = recorded_manifest(self._storage, key)
        return self.known_entry(key, manifest) if manifest is not None else None

    def ref(self, name: str) -> str | None:
        """The key the ref ``name`` points at (`set_ref`), or None: one read.

        A ref is a hint (the latest record of something, e.g. a source's stored
        version), never locked: look up what it names, which may be gone.

        Raises:
            InvalidFingerprintError: ``name`` is not 32 lowercase hex characters.

        Example:
            >>> store = CacheStore("memory://ref-doc")
            >>> store.set_ref("a" * 32, "b" * 32)
            >>> store.ref("a" * 32) == "b" * 32, store.ref("c" * 32)
            (True, None)
        """
        return read_ref(self._storage, check_fingerprint(name))

    def set_ref(self, name: str, key: str) -> None:
        """Point the ref ``name`` at ``key``: one write, replacing it whole (see `ref`).

        Raises:
            InvalidFingerprintError: ``name`` or ``key`` is not 32 lowercase hex characters.

        Example:
            >>> store = CacheStore("memory://set-ref-doc")
            >>> store.set_ref("a" * 32, "c" * 32)
            >>> store.ref("a" * 32) == "c" * 32
            True
        """
        write_ref(self._storage, check_fingerprint(name), check_fingerprint(key))

    def check_entries(self, entries: Collection[CacheEntry]) -> bool:
        """Whether ``entries`` look intact without reading their data: a stat per file locally.

        A file of the wrong size, missing, or rewritten since its entry was
        published and failing its checksum: that entry is quarantined with a
        `CacheCorruptionWarning` and False is returned. On object stores this
        reads nothing and returns True: files are checked when read.

        Example:
            >>> store = CacheStore("memory://check-doc")
            >>> store.check_entries([store.get_or_create("8" * 32, lambda w: None)])
            True
        """
        below = [entry for entry in entries if self._layers.reader_of(entry) is not None]
        intact = self._layers.check(below, self._checksums)
        checked = {id(entry) for entry in below}
        for entry in entries:
            if id(entry) in checked:
                continue
            found = (
                self._reader.inspect(entry.key, self._checksums, reading=False)
                if self.is_local
                else None
            )
            if isinstance(found, Corrupt):
                self._reader.quarantine(entry.key, found, warn=True)
                intact = False
            elif found is None and self.is_local:
                intact = False
        return intact

    def entry_url(self, key: str) -> str:
        """Where the entry under ``key`` is (or would be), as a path or URL under `root`.

        Example:
            >>> CacheStore("memory://url-doc").entry_url("ab" * 16)
            'memory://url-doc/objects/ab/abababababababababababababababab'
        """
        return "/".join((self.root.rstrip("/"), *Layout.entry_parts(key)))

    def holds(self, entry: CacheEntry) -> bool:
        """Whether ``entry`` is an entry of this store or of a ``read_from`` store beneath it.

        Not of another store with the same key: what is held is referenced, not copied.

        Example:
            >>> store = CacheStore("memory://holds-doc")
            >>> store.holds(store.get_or_create("5" * 32, lambda w: None))
            True
        """
        if self._random_names:
            return False
        return entry.in_store(self._storage.url) or self._layers.reader_of(entry) is not None

    # -- writing ---------------------------------------------------------------------------

    def writer(
        self, fingerprint: str, *, metadata: Mapping[str, object] | None = None
    ) -> EntryWriter:
        """A writer for a new entry; it is published when its ``with`` block exits cleanly.

        Args:
            fingerprint: The fingerprint of the dataset being written.
            metadata: JSON data stored in the manifest (parent fingerprints,
                transform, features, num_rows...); read back as `CacheEntry.metadata`.

        Raises:
            InvalidFingerprintError: ``fingerprint`` is not 32 lowercase hex characters.
            CacheMetadataError: ``metadata`` is not JSON data.

        Example:
            >>> store = CacheStore("memory://writer-doc")
            >>> with store.writer("2" * 32, metadata={"num_rows": 1}) as w:
            ...     with w.open("data-00000-of-00001.arrow") as f:
            ...         _ = f.write(b"arrow bytes")
            >>> w.entry.files
            ('data-00000-of-00001.arrow',)
        """
        key = check_fingerprint(fingerprint)
        return self._new_writer(key, check_metadata(key, metadata), locked=False)

    def _new_writer(
        self, fingerprint: str, metadata: dict[str, JSONValue], *, locked: bool
    ) -> EntryWriter:
        key = secrets.token_hex(16) if self._random_names else fingerprint
        folder = writer_folder(self._layout, key, locked=locked or self._random_names)
        publish = functools.partial(self._publish, key, locked=locked or self._random_names)
        return EntryWriter(fingerprint, metadata, self._storage, folder, publish)

    def _publish(
        self, key: str, folder: str, manifest: Manifest, data: bytes, *, locked: bool
    ) -> CacheEntry:
        # Publishing and evicting one fingerprint happen under its lock.
        lock = None if locked else self._acquire_lock(key)
        try:
            if lock is not None and not self._storage.object_store:
                remove_dead_writers(self._layout, key)
            return publish(self._reader, key, folder, manifest, data)
        finally:
            if lock is not None:
                lock.release()

    def _acquire_lock(self, key: str) -> EntryLock:
        lock = make_lock(self._layout, key, self._lock_mode, self._stale_lock_timeout)
        if not lock.acquire(self._lock_timeout):
            raise CacheLockTimeoutError(
                f"Timed out after {self._lock_timeout} s waiting for the lock on cache entry "
                f"{key!r} ({lock.path!r}): another process is building it. Pass a larger "
                "lock_timeout= (None waits as long as that process lives)."
            )
        return lock

    def _try_lock(self, key: str) -> EntryLock | None:
        lock = make_lock(self._layout, key, self._lock_mode, self._stale_lock_timeout)
        return lock if lock.acquire(0) else None

    def get_or_create(
        self,
        fingerprint: str,
        build: Callable[[EntryWriter], object],
        *,
        metadata: Mapping[str, object] | None = None,
    ) -> CacheEntry:
        """The entry for ``fingerprint``, built by ``build(writer)`` if it is not cached.

        Holds the fingerprint's lock while building: when several processes
        ask for the same missing entry, one builds and the others wait, then
        reuse its result. If ``build`` raises, nothing is published and the
        exception propagates.

        Args:
            fingerprint: The fingerprint of the dataset.
            build: Writes the entry's files through the `EntryWriter` it is given.
            metadata: JSON data stored in the manifest when the entry is built
                (checked then: a hit returns the stored entry as it is).

        Raises:
            CacheMetadataError: ``metadata`` is not JSON data (when building).
            CacheLockTimeoutError: ``lock_timeout`` passed while another process built it.

        Example:
            >>> store = CacheStore("memory://get-or-create-doc")
            >>> entry = store.get_or_create("3" * 32, lambda w: w.write_bytes("a.bin", b"1"))
            >>> entry.files
            ('a.bin',)
        """
        key = check_fingerprint(fingerprint)
        if self._random_names:
            return self._build(key, build, check_metadata(key, metadata), locked=True)
        entry = self._recorded_entry(key) or self._reader.open(key) or self._layers.lookup(key)
        if entry is not None:
            return entry
        lock = self._acquire_lock(key)
        try:
            # Built by another process while we waited?
            entry = self._reader.open(key) or self._layers.lookup(key)
            if entry is not None:
                return entry
            if not self._storage.object_store:  # (there, ours overwrite them: in place)
                remove_dead_writers(self._layout, key)  # a killed builder's files, before ours
            return self._build(key, build, check_metadata(key, metadata), locked=True)
        finally:
            lock.release()

    def _build(
        self,
        key: str,
        build: Callable[[EntryWriter], object],
        metadata: dict[str, JSONValue],
        *,
        locked: bool,
    ) -> CacheEntry:
        with self._new_writer(key, metadata, locked=locked) as writer:
            build(writer)
        return writer.entry

    # -- maintenance -----------------------------------------------------------------------

    def ls(self) -> list[EntryInfo]:
        """Every entry, most recently used first.

        Example:
            >>> CacheStore("memory://ls-doc").ls()
            []
        """
        infos = describe_all(self._layout, foreign_ttl=self._foreign_lease_ttl)
        return sorted(infos, key=lambda info: (-info.last_used.timestamp(), info.fingerprint))

    def verify(self, fingerprint: str | None = None) -> VerifyReport:
        """Check the checksum of every file of one entry, or of all; quarantine corrupt ones.

        Example:
            >>> CacheStore("memory://verify-doc").verify().ok
            True
        """
        keys = (
            [check_fingerprint(fingerprint)]
            if fingerprint is not None
            else list(self._layout.entry_keys())
        )
        checked: list[str] = []
        missing: list[str] = []
        corrupt: dict[str, tuple[str, ...]] = {}
        for key in keys:
            if not self._storage.exists(self._layout.entry_file(key, MANIFEST)):
                if fingerprint is not None:
                    missing.append(key)
                continue
            lease = self._reader.lease(key)
            try:
                found = self._reader.inspect(key, "always") if lease.pin() else None
            finally:
                lease.release()
            if isinstance(found, Corrupt):
                self._reader.quarantine(key, found, warn=False)
                corrupt[key] = tuple(found.problems)
            elif found is None:
                missing.extend([key] if fingerprint is not None else [])
            else:
                checked.append(key)
        return VerifyReport(tuple(checked), corrupt, tuple(missing))

    def gc(
        self,
        max_size_bytes: int,
        *,
        grace: float = DEFAULT_GRACE,
        keep: Collection[str] = (),
    ) -> GcReport:
        """Evict least-recently-used entries until their total size is at most ``max_size_bytes``.

        Entries held open by a live process (a reader lease), and those named
        in ``keep`` (what kept dataset versions reference), are never evicted.
        Also removes ``tmp/`` garbage (see `clean_tmp`) and quarantined entries
        older than ``grace`` seconds.

        Example:
            >>> CacheStore("memory://gc-doc").gc(20 * 10**9).evicted
            ()
        """
        if max_size_bytes < 0:
            raise ValueError(f"max_size_bytes={max_size_bytes!r} must be >= 0")
        return collect(
            self._layout,
            max_size_bytes,
            grace=grace,
            foreign_ttl=self._foreign_lease_ttl,
            try_lock=self._try_lock,
            keep=frozenset(keep),
        )

    def clean_tmp(self, older_than: float | datetime.timedelta = DEFAULT_GRACE) -> tuple[str, ...]:
        """Remove what killed writers left behind; return the paths removed.

        A ``tmp/`` item goes at once if its writer, on this host, is dead; a
        live writer's is never touched. Items of other hosts (and, on object
        stores, ``objects/`` folders without manifest.json) go once nothing
        in them changed for ``older_than`` seconds.

        Example:
            >>> CacheStore("memory://clean-doc").clean_tmp(older_than=3600)
            ()
        """
        seconds = (
            older_than.total_seconds() if isinstance(older_than, datetime.timedelta) else older_than
        )
        return tuple(clean_tmp(self._layout, seconds, self._try_lock))

    def remove(self, fingerprint: str, *, force: bool = False) -> bool:
        """Remove one entry; return whether it was removed.

        An entry held open by a live process is kept (False) unless ``force``;
        forced, on local folders, files already open or mapped stay readable,
        and no usage record is read (a reader that reads it later fails with
        `CacheEntryDamagedError`, and computes it again).

        Example:
            >>> CacheStore("memory://remove-doc").remove("4" * 32)
            False
        """
        key = check_fingerprint(fingerprint)
        present = (
            read_manifest(self._layout, key) is not None  # one GET, where exists() lists
            if self._storage.object_store
            else self._storage.exists(self._layout.entry_file(key, MANIFEST))  # a stat
        )
        if not present:
            return False
        lock = self._acquire_lock(key)
        try:
            outcome = evict(self._layout, key, foreign_ttl=self._foreign_lease_ttl, force=force)
        finally:
            lock.release()
        return outcome is Eviction.EVICTED
