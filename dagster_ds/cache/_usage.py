"""When an entry was last used, and the summary `CacheStore.ls` lists.

Last use is a small sidecar file ``objects/<fp[:2]>/<fp>/last-used`` holding
``time.time_ns()`` as text, rewritten at each lookup; the manifest itself is
never rewritten. A sidecar that is missing or torn (a reader raced a rewrite)
falls back to the entry's creation time, which only makes eviction a little
less precise.
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections.abc import Iterator
from dataclasses import dataclass

from dagster_ds.cache._json import JSONValue
from dagster_ds.cache._layout import LAST_USED, MANIFEST, Layout
from dagster_ds.cache._leases import live_leases
from dagster_ds.cache._manifest import Manifest, ManifestError
from dagster_ds.errors import CacheFormatError


@dataclass(frozen=True)
class EntryInfo:
    """A summary of one cache entry, as listed by `CacheStore.ls`.

    Attributes:
        fingerprint: The entry's fingerprint.
        size: Total size of its data files, in bytes.
        files: Names of its data files.
        created: When it was published (UTC).
        last_used: When it was last looked up or created (UTC).
        in_use: Whether a live process holds it open (gc skips it).
        metadata: The metadata given when it was written.

    Example:
        >>> [info.fingerprint for info in CacheStore("memory://ls-doc").ls()]
        []
    """

    fingerprint: str
    size: int
    files: tuple[str, ...]
    created: datetime.datetime
    last_used: datetime.datetime
    in_use: bool
    metadata: dict[str, JSONValue]


def touch_last_used(layout: Layout, key: str) -> None:
    with contextlib.suppress(OSError):  # the entry may have been evicted meanwhile
        data = str(time.time_ns()).encode()
        layout.storage.write_bytes(layout.entry_file(key, LAST_USED), data, durable=False)


def last_used_ns(layout: Layout, key: str, manifest: Manifest) -> int:
    with contextlib.suppress(OSError, ValueError):
        return int(layout.storage.read_bytes(layout.entry_file(key, LAST_USED)).decode())
    return int(manifest.created_at.timestamp() * 1e9)


def read_manifest(layout: Layout, key: str) -> tuple[Manifest, bytes] | None:
    """An entry's parsed manifest and its bytes; None if absent or unreadable."""
    try:
        data = layout.storage.read_bytes(layout.entry_file(key, MANIFEST))
        return Manifest.from_bytes(data, where=layout.entry(key)), data
    except (FileNotFoundError, NotADirectoryError, ManifestError, CacheFormatError):
        return None


def describe(layout: Layout, key: str, *, foreign_ttl: float) -> EntryInfo | None:
    read = read_manifest(layout, key)
    if read is None:
        return None
    manifest = read[0]
    used = last_used_ns(layout, key, manifest)
    return EntryInfo(
        fingerprint=manifest.fingerprint,
        size=manifest.size,
        files=tuple(record.name for record in manifest.files),
        created=manifest.created_at,
        last_used=datetime.datetime.fromtimestamp(used / 1e9, datetime.UTC),
        in_use=live_leases(layout, key, foreign_ttl=foreign_ttl) > 0,
        metadata=manifest.metadata,
    )


def scan(layout: Layout) -> Iterator[tuple[str, Manifest, int]]:
    """(key, manifest, last used in ns) of every published, readable entry."""
    for key in layout.entry_keys():
        read = read_manifest(layout, key)
        if read is not None:
            yield key, read[0], last_used_ns(layout, key, read[0])
