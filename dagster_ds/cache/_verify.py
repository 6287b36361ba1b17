"""Checking an entry's files against its manifest, and the checksum policy.

A lookup reads the manifest only. On a local store it also stats the entry's
files: a file of another size than its manifest says, or modified after the entry
was published, is checksummed at once (a damaged entry is then a miss). Checksums
(xxh3-128 of the whole file) are checked when a file's bytes are first read, per
the store's `ChecksumPolicy`:

- ``"first-use"`` (default): the first time this process reads the file, and
  again whenever it changed (size, mtime/ctime in nanoseconds or inode locally;
  ETag or modification time on object stores). Files this process wrote itself
  count as checked.
- ``"always"``: on every lookup and read (reads every byte each time).
- ``"never"``: sizes only; ``CacheStore.verify()`` still checks checksums.

A skip that reads no data therefore checks no checksum: ``dagster-ds cache
verify`` scrubs a whole store on demand.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Literal

import xxhash

from dagster_ds.cache._layout import Layout
from dagster_ds.cache._manifest import FileRecord, Manifest

ChecksumPolicy = Literal["first-use", "always", "never"]
CHECKSUM_POLICIES: tuple[ChecksumPolicy, ...] = ("first-use", "always", "never")

_CHUNK = 1 << 20


@dataclass(frozen=True)
class VerifyReport:
    """What `CacheStore.verify` found.

    Attributes:
        checked: Fingerprints of the entries whose every file was checksummed.
        corrupt: For each corrupt entry, what is wrong with it (it was moved to
            ``<root>/quarantine/``).
        missing: Fingerprints asked for that are not in the cache.

    Example:
        >>> report = CacheStore("memory://verify-doc").verify()
        >>> report.ok, report.checked
        (True, ())
    """

    checked: tuple[str, ...] = ()
    corrupt: dict[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])
    missing: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no entry was corrupt."""
        return not self.corrupt


#: A file version checksummed: (store, key, file name, its checksum, its stamp).
Token = tuple[str, str, str, str, tuple[int, str]]


class _VerifiedFiles:
    """Which file versions this process has already checksummed."""

    _LIMIT = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[Token] = set()

    def __contains__(self, token: Token) -> bool:
        with self._lock:
            return token in self._seen

    def add(self, token: Token) -> None:
        with self._lock:
            if len(self._seen) >= self._LIMIT:
                self._seen.clear()
            self._seen.add(token)


VERIFIED = _VerifiedFiles()


def file_checksum(layout: Layout, path: str, size: int | None = None) -> str:
    hasher = xxhash.xxh3_128()
    with layout.storage.open_read(path, size) as file:
        while chunk := file.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def _token(layout: Layout, key: str, record: FileRecord, stamp: tuple[int, str]) -> Token:
    return (layout.storage.url, key, record.name, record.xxh3_128, stamp)


def check_file(layout: Layout, key: str, record: FileRecord, policy: ChecksumPolicy) -> str | None:
    """What is wrong with one file of an entry (None if nothing), about to be read.

    The size always; the checksum per ``policy`` (for "first-use", once per file
    version in this process).
    """
    path = layout.entry_file(key, record.name)
    stamp = layout.storage.stamp(path)
    if stamp is None:
        return f"{record.name} is missing"
    if stamp[0] != record.size:
        return f"{record.name} has {stamp[0]} bytes, the manifest says {record.size}"
    token = _token(layout, key, record, stamp)
    if policy == "never" or (policy == "first-use" and token in VERIFIED):
        return None
    try:
        digest = file_checksum(layout, path, stamp[0])
    except FileNotFoundError:
        return f"{record.name} is missing"
    if digest != record.xxh3_128:
        return f"{record.name} has xxh3-128 checksum {digest}, the manifest says {record.xxh3_128}"
    VERIFIED.add(token)
    return None


def check_files(layout: Layout, key: str, manifest: Manifest, policy: ChecksumPolicy) -> list[str]:
    """What is wrong with any file of an entry (empty if nothing): `check_file` on each."""
    found = (check_file(layout, key, record, policy) for record in manifest.files)
    return [problem for problem in found if problem is not None]


def check_stamps(layout: Layout, key: str, manifest: Manifest, policy: ChecksumPolicy) -> list[str]:
    """What a local lookup sees without reading data (empty if nothing): a stat per file.

    A file whose size differs is damaged. One modified after the entry was
    published (its mtime is later than the manifest's creation time) is checksummed
    now, once per version of it in this process (unless ``policy`` is "never"): it
    was rewritten, perhaps damaged.
    """
    if not layout.storage.is_local:
        return []
    published = int(manifest.created_at.timestamp() * 1e9)
    problems: list[str] = []
    for record in manifest.files:
        stamp = layout.storage.stamp(layout.entry_file(key, record.name))
        if stamp is None:
            problems.append(f"{record.name} is missing")
        elif stamp[0] != record.size:
            problems.append(f"{record.name} has {stamp[0]} bytes, the manifest says {record.size}")
        elif policy != "never" and _modified_ns(stamp) > published:
            problem = check_file(layout, key, record, "first-use")
            problems.extend([problem] if problem is not None else [])
    return problems


def _modified_ns(stamp: tuple[int, str]) -> int:
    """The mtime in a local stamp (``inode:mtime_ns:ctime_ns``)."""
    parts = stamp[1].split(":")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0


def mark_verified(layout: Layout, key: str, manifest: Manifest) -> None:
    """Record that an entry's files, as they are now on disk, match their checksums."""
    for record in manifest.files:
        stamp = layout.storage.stamp(layout.entry_file(key, record.name))
        if stamp is None or stamp[0] != record.size:
            return
        VERIFIED.add(_token(layout, key, record, stamp))
