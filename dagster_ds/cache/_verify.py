"""Checking an entry's files against its manifest, and the checksum policy.

Sizes are checked on every lookup (one ``stat`` per file). Checksums (xxh3-128
of the whole file) are checked according to the store's `ChecksumPolicy`:

- ``"first-use"`` (default): the first time this process looks an entry up,
  and again whenever one of its files changes on disk (size, mtime/ctime in
  nanoseconds or inode locally; ETag or modification time on object stores).
  Entries this process wrote itself count as checked.
- ``"always"``: on every lookup (reads every byte each time).
- ``"never"``: sizes only; ``CacheStore.verify()`` still checks checksums.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Literal

import xxhash

from dagster_ds.cache._layout import Layout
from dagster_ds.cache._manifest import Manifest

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


class _VerifiedFiles:
    """Which (entry, manifest, file stamps) this process has already checksummed."""

    _LIMIT = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[tuple[object, ...]] = set()

    def __contains__(self, token: tuple[object, ...]) -> bool:
        with self._lock:
            return token in self._seen

    def add(self, token: tuple[object, ...]) -> None:
        with self._lock:
            if len(self._seen) >= self._LIMIT:
                self._seen.clear()
            self._seen.add(token)


VERIFIED = _VerifiedFiles()


def file_checksum(layout: Layout, path: str) -> str:
    hasher = xxhash.xxh3_128()
    with layout.storage.open_read(path) as file:
        while chunk := file.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def _token(
    layout: Layout, key: str, manifest_bytes: bytes, stamps: list[tuple[int, str]]
) -> tuple[object, ...]:
    return (layout.storage.url, key, xxhash.xxh3_128_hexdigest(manifest_bytes), tuple(stamps))


def check_files(
    layout: Layout,
    key: str,
    manifest: Manifest,
    manifest_bytes: bytes,
    policy: ChecksumPolicy,
) -> list[str]:
    """What is wrong with an entry's files (empty if nothing).

    Sizes are checked always, checksums per ``policy``.
    """
    problems: list[str] = []
    stamps: list[tuple[int, str]] = []
    for record in manifest.files:
        stamp = layout.storage.stamp(layout.entry_file(key, record.name))
        if stamp is None:
            problems.append(f"{record.name} is missing")
        elif stamp[0] != record.size:
            problems.append(f"{record.name} has {stamp[0]} bytes, the manifest says {record.size}")
        else:
            stamps.append(stamp)
    if problems:
        return problems
    token = _token(layout, key, manifest_bytes, stamps)
    if policy == "never" or (policy == "first-use" and token in VERIFIED):
        return []
    for record in manifest.files:
        try:
            digest = file_checksum(layout, layout.entry_file(key, record.name))
        except FileNotFoundError:
            problems.append(f"{record.name} is missing")
            continue
        if digest != record.xxh3_128:
            problems.append(
                f"{record.name} has xxh3-128 checksum {digest}, the manifest says {record.xxh3_128}"
            )
    if not problems:
        VERIFIED.add(token)
    return problems


def mark_verified(layout: Layout, key: str, manifest: Manifest, manifest_bytes: bytes) -> None:
    """Record that an entry's files, as they are now on disk, match their checksums."""
    stamps: list[tuple[int, str]] = []
    for record in manifest.files:
        stamp = layout.storage.stamp(layout.entry_file(key, record.name))
        if stamp is None or stamp[0] != record.size:
            return
        stamps.append(stamp)
    VERIFIED.add(_token(layout, key, manifest_bytes, stamps))
