"""Publishing a written entry through `publish_folder`, manifest.json as its commit file.

The caller holds the fingerprint's lock (publishing and evicting one
fingerprint are serialized). If the entry was published meanwhile by someone
else, theirs is returned and ours discarded: never a mixed entry.

On an object store a writer that held the lock from the start wrote its files
in place (``folder`` is the entry's own): publishing is then one conditional
write of manifest.json; otherwise the files named by the manifest are moved in
from ``tmp/``, nothing listed.
"""

from __future__ import annotations

from dagster_ds.cache._commit import publish_folder
from dagster_ds.cache._entry import CacheEntry
from dagster_ds.cache._layout import MANIFEST, Layout, make_tmp_name
from dagster_ds.cache._lookup import Reader
from dagster_ds.cache._manifest import Manifest
from dagster_ds.cache._removal import quarantine
from dagster_ds.cache._verify import mark_verified
from dagster_ds.errors import CacheError


def writer_folder(layout: Layout, key: str, *, locked: bool) -> str:
    """Where a writer of ``key`` writes its files: a new folder in ``tmp/``, or in place.

    In place (the entry's own folder) on an object store when the writer holds
    ``key``'s lock from the start and no manifest is there (the caller looked):
    no copy at publish. A killed writer's files stay unpublished there, without
    manifest.json, until the next writer of ``key`` overwrites them or gc removes
    them (`clean_tmp`).
    """
    if locked and layout.storage.object_store:
        return layout.entry(key)
    layout.storage.makedirs(layout.tmp)
    return layout.tmp_item(make_tmp_name(key))


def publish(reader: Reader, key: str, folder: str, manifest: Manifest, data: bytes) -> CacheEntry:
    """Publish the entry written in ``folder`` under ``key``; the result holds a lease."""
    layout = reader.layout
    lease = reader.lease(key)  # gc must not evict it before our caller gets it
    try:
        existing = _publish_staged(reader, key, folder, manifest, data)
    except BaseException:
        lease.release()
        raise
    if existing is not None:  # published by someone else first: use theirs
        lease.release()
        if folder != layout.entry(key):  # (written in place: those files are theirs now)
            layout.storage.remove_tree(folder)
        return existing
    mark_verified(layout, key, manifest)
    return CacheEntry(layout, key, manifest, lease, reader.check_read)


def _publish_staged(
    reader: Reader, key: str, folder: str, manifest: Manifest, data: bytes
) -> CacheEntry | None:
    """None once ``folder`` is published; the entry someone else published first, if any."""
    layout = reader.layout
    names = [record.name for record in manifest.files]
    for _ in range(3):
        if publish_folder(
            layout.storage, folder, layout.entry(key), MANIFEST, data, replace=False, files=names
        ):
            return None
        existing = reader.open(key)
        if existing is not None:
            return existing
        quarantine(layout, key)  # not a valid entry (reader.open moved corrupt ones): aside
    raise CacheError(
        f"Could not publish cache entry {key!r}: {layout.entry(key)!r} keeps reappearing. "
        "Is another program writing into the cache folder?"
    )
