"""Publishing a written entry: one atomic rename, or manifest.json last on object stores.

The caller holds the fingerprint's lock (publishing and evicting one
fingerprint are serialized). If the entry was published meanwhile by someone
else, theirs is returned and ours discarded: never a mixed entry.
"""

from __future__ import annotations

from dagster_ds.cache._entry import CacheEntry
from dagster_ds.cache._layout import MANIFEST
from dagster_ds.cache._leases import Lease
from dagster_ds.cache._lookup import Reader
from dagster_ds.cache._manifest import Manifest
from dagster_ds.cache._removal import quarantine
from dagster_ds.cache._usage import touch_last_used
from dagster_ds.cache._verify import mark_verified
from dagster_ds.errors import CacheError


def publish(reader: Reader, key: str, folder: str, manifest: Manifest, data: bytes) -> CacheEntry:
    """Publish the entry written in ``folder`` under ``key``; the result holds a lease."""
    layout = reader.layout
    lease = Lease(layout, key)  # gc must not evict it before our caller gets it
    try:
        if layout.storage.is_local:
            existing = _by_rename(reader, key, folder, data)
        else:
            existing = _by_manifest(reader, key, folder, manifest, data)
    except BaseException:
        lease.release()
        raise
    if existing is not None:  # published by someone else first: use theirs
        lease.release()
        layout.storage.remove_tree(folder)
        return existing
    touch_last_used(layout, key)
    mark_verified(layout, key, manifest, data)
    return CacheEntry(layout, key, manifest, lease)


def _by_rename(reader: Reader, key: str, folder: str, data: bytes) -> CacheEntry | None:
    storage, layout = reader.layout.storage, reader.layout
    storage.write_bytes(storage.child(folder, MANIFEST), data)
    storage.sync_dir(folder)
    storage.makedirs(layout.entry_parent(key))
    for _ in range(3):
        if storage.rename_dir(folder, layout.entry(key)):
            storage.sync_dir(layout.entry_parent(key))
            return None
        existing = reader.open(key)
        if existing is not None:
            return existing
        quarantine(layout, key)  # not a valid entry (reader.open moved corrupt ones): aside
    raise CacheError(
        f"Could not publish cache entry {key!r}: {layout.entry(key)!r} keeps reappearing. "
        "Is another program writing into the cache folder?"
    )


def _by_manifest(
    reader: Reader, key: str, folder: str, manifest: Manifest, data: bytes
) -> CacheEntry | None:
    # No atomic directory rename: move the files in, then write manifest.json, the
    # commit point (atomically: a whole-object write, or a temporary file and a move).
    storage, layout = reader.layout.storage, reader.layout
    if storage.exists(layout.entry_file(key, MANIFEST)):
        existing = reader.open(key)
        if existing is not None:
            return existing
    storage.makedirs(layout.entry(key))
    for record in manifest.files:
        storage.move_file(storage.child(folder, record.name), layout.entry_file(key, record.name))
    storage.replace_bytes(layout.entry_file(key, MANIFEST), data)
    storage.remove_tree(folder)
    return None
