"""When an entry was last used, and the summary `CacheStore.ls` lists.

Reading writes nothing per entry: last use comes from the usage records
(`_leases`), one per process that read data, so it is as coarse as a process
(or a run). An entry no record names was last used when it was created: so
are the entries of an earlier release's cache, whose ``last-used`` sidecars are
not read (that would be a request per entry on an object store).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass

from dagster_ds.cache._json import JSONValue
from dagster_ds.cache._layout import MANIFEST, Layout
from dagster_ds.cache._leases import pinned_keys, usage_times
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
        last_used: When a process last read it, or when it was created (UTC).
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


def last_used_ns(key: str, manifest: Manifest, times: dict[str, float]) -> int:
    """When ``key`` was last read (``times``: `usage_times`), or created, in ns."""
    used = int(manifest.created_at.timestamp() * 1e9)
    if key in times:
        used = max(used, int(times[key] * 1e9))
    return used


def read_manifest(layout: Layout, key: str) -> tuple[Manifest, bytes] | None:
    """An entry's parsed manifest and its bytes; None if absent or unreadable."""
    try:
        data = layout.storage.read_bytes(layout.entry_file(key, MANIFEST))
        return Manifest.from_bytes(data, where=layout.entry(key)), data
    except (FileNotFoundError, NotADirectoryError, ManifestError, CacheFormatError):
        return None


def describe(
    layout: Layout, key: str, *, times: dict[str, float], pinned: set[str]
) -> EntryInfo | None:
    """The `EntryInfo` of ``key`` (``times``: `usage_times`, ``pinned``: `pinned_keys`)."""
    read = read_manifest(layout, key)
    if read is None:
        return None
    manifest = read[0]
    used = last_used_ns(key, manifest, times)
    return EntryInfo(
        fingerprint=manifest.fingerprint,
        size=manifest.size,
        files=tuple(record.name for record in manifest.files),
        created=manifest.created_at,
        last_used=datetime.datetime.fromtimestamp(used / 1e9, datetime.UTC),
        in_use=key in pinned,
        metadata=manifest.metadata,
    )


def describe_all(layout: Layout, *, foreign_ttl: float) -> list[EntryInfo]:
    """`describe` for every entry of the store."""
    times, pinned = usage_times(layout), pinned_keys(layout, foreign_ttl=foreign_ttl)
    infos = (describe(layout, key, times=times, pinned=pinned) for key in layout.entry_keys())
    return [info for info in infos if info is not None]


def scan(layout: Layout) -> Iterator[tuple[str, Manifest, int]]:
    """(key, manifest, last used in ns) of every published, readable entry."""
    times = usage_times(layout)
    for key in layout.entry_keys():
        read = read_manifest(layout, key)
        if read is not None:
            yield key, read[0], last_used_ns(key, read[0], times)
