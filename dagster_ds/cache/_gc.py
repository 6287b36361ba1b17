"""Garbage: tmp/ leftovers, orphans, old quarantine, and least-recently-used eviction.

What counts as garbage in ``tmp/``: an item whose writer is known dead (same
host, its pid gone or reused: the name records pid and process start), or, when
that cannot be known (another host, a name we did not make), an item nothing
under which was modified for ``older_than`` seconds. A live writer's folder is
never removed, however old. A writer that takes over a fingerprint removes
at once the folders its dead predecessors left for that fingerprint
(`remove_dead_writers`), so a killed write's files do not outlive the next
successful one; on object stores, where that would list ``tmp/`` at every
publish, they wait for `clean_tmp` (a builder writes in place there, and the
next one overwrites them). On object stores an ``objects/<fp>/`` folder
without manifest.json is a killed writer's partial publish, removed by the same
age rule while nobody holds its lock.

Eviction (`gc`) goes from the least recently used entry up (last use as the
usage records tell it, see `_leases`), skipping entries a live process reads,
until the entries' total size is at most the target; the chosen entries are
evicted under one eviction notice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from dagster_ds.cache._layout import MANIFEST, Layout, quarantined_at, tmp_owner
from dagster_ds.cache._leases import fold_ended, pinned_keys
from dagster_ds.cache._locks import EntryLock
from dagster_ds.cache._removal import Eviction, evict_many
from dagster_ds.cache._usage import scan

#: Default grace period: tmp/ items of unknown owners younger than this are kept.
DEFAULT_GRACE = 3600.0


@dataclass(frozen=True)
class GcReport:
    """What `CacheStore.gc` did.

    Attributes:
        evicted: Fingerprints of the entries removed, least recently used first.
        in_use: Fingerprints that would have been evicted but are held open by a live process.
        freed_bytes: Total size of the evicted entries.
        total_bytes: Total size of the entries left.
        removed_garbage: Paths of the tmp/, orphan and quarantine items removed.

    Example:
        >>> report = CacheStore("memory://gc-doc").gc(max_size_bytes=20 * 10**9)
        >>> report.evicted, report.total_bytes
        ((), 0)
    """

    evicted: tuple[str, ...]
    in_use: tuple[str, ...]
    freed_bytes: int
    total_bytes: int
    removed_garbage: tuple[str, ...]


def clean_tmp(
    layout: Layout, older_than: float, try_lock: Callable[[str], EntryLock | None]
) -> list[str]:
    """Remove in-flight-write garbage; return the paths removed."""
    storage = layout.storage
    now = time.time()
    removed: list[str] = []

    def old(path: str) -> bool:
        mtime = storage.newest_mtime(path)
        return mtime is not None and now - mtime >= older_than

    for name in storage.listdir(layout.tmp):
        path = layout.tmp_item(name)
        owner = tmp_owner(name)
        # A local owner's liveness is known; others' is guessed from the age of their files.
        if owner.is_dead() if owner is not None and owner.is_local else old(path):
            storage.remove_tree(path)
            removed.append(path)
    if not storage.is_local:
        for key in list(layout.entry_keys()):
            if storage.exists(layout.entry_file(key, MANIFEST)) or not old(layout.entry(key)):
                continue
            lock = try_lock(key)
            if lock is None:
                continue  # a writer is publishing it right now
            try:
                if not storage.exists(layout.entry_file(key, MANIFEST)):
                    storage.remove_tree(layout.entry(key))
                    removed.append(layout.entry(key))
            finally:
                lock.release()
    return removed


def remove_dead_writers(layout: Layout, key: str) -> list[str]:
    """Remove the ``tmp/`` folders of ``key``'s writers known to be dead; return their paths.

    Called by a writer of ``key`` holding its lock, before it builds or publishes.
    Only writers on this host can be known dead (pid gone, or reused by a later
    process); a live writer's folder, or one on another host, stays for `clean_tmp`.
    """
    storage = layout.storage
    removed: list[str] = []
    for name in storage.listdir(layout.tmp):
        if not name.startswith(f"{key}-"):
            continue
        owner = tmp_owner(name)
        if owner is not None and owner.is_local and owner.is_dead():
            storage.remove_tree(layout.tmp_item(name))
            removed.append(layout.tmp_item(name))
    return removed


def purge_quarantine(layout: Layout, older_than: float) -> list[str]:
    storage = layout.storage
    now = time.time()
    removed: list[str] = []
    for name in storage.listdir(layout.quarantine):
        since = quarantined_at(name)
        if since is not None and now - since >= older_than:
            storage.remove_tree(layout.quarantine_item(name))
            removed.append(layout.quarantine_item(name))
    return removed


def collect(
    layout: Layout,
    max_size_bytes: int,
    *,
    grace: float,
    foreign_ttl: float,
    try_lock: Callable[[str], EntryLock | None],
    keep: Collection[str] = (),
) -> GcReport:
    garbage = clean_tmp(layout, grace, try_lock) + purge_quarantine(layout, grace)
    fold_ended(layout, foreign_ttl=foreign_ttl)
    entries = sorted(scan(layout), key=lambda item: (item[2], item[0]))
    total = sum(manifest.size for _, manifest, _ in entries)
    pinned = pinned_keys(layout, foreign_ttl=foreign_ttl)
    in_use: list[str] = []
    chosen: dict[str, tuple[int, EntryLock]] = {}
    expected = total
    for key, manifest, _ in entries:
        if expected <= max_size_bytes:
            break
        lock = None if key in keep or key in pinned else try_lock(key)
        if lock is None:  # read by a live process, kept, or being published right now
            in_use.append(key)
            continue
        chosen[key] = (manifest.size, lock)
        expected -= manifest.size
    try:
        outcomes = evict_many(layout, list(chosen), foreign_ttl=foreign_ttl) if chosen else {}
    finally:
        for _, lock in chosen.values():
            lock.release()
    evicted: list[str] = []
    freed = 0
    for key, (size, _) in chosen.items():
        outcome = outcomes[key]
        if outcome is Eviction.IN_USE:
            in_use.append(key)
            continue
        total -= size
        if outcome is Eviction.EVICTED:
            evicted.append(key)
            freed += size
    return GcReport(tuple(evicted), tuple(in_use), freed, total, tuple(garbage))
