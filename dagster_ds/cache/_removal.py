"""Taking published entries out: eviction and quarantine.

Unpublishing is the reverse of publishing, and as atomic: on a local folder the
entry's directory is renamed out of ``objects/`` in one step; on an object
store its manifest (the commit point) is deleted first, so the entry stops
existing before any data file goes.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Collection
from dataclasses import dataclass

from dagster_ds.cache._layout import MANIFEST, Layout, make_quarantine_name, make_tmp_name
from dagster_ds.cache._leases import DEFAULT_FOREIGN_TTL, eviction_notice
from dagster_ds.cache._manifest import Manifest, ManifestError
from dagster_ds.errors import CacheFormatError


@dataclass(frozen=True)
class _TakenOut:
    """An entry no longer visible to lookups, not yet destroyed."""

    key: str
    moved_to: str | None  # local: where its directory now is (under tmp/)
    manifest: bytes | None  # object stores: the manifest that was deleted


def _take_out(layout: Layout, key: str) -> _TakenOut | None:
    """Unpublish an entry; None if it was not published."""
    storage = layout.storage
    if storage.is_local:
        storage.makedirs(layout.tmp)
        target = layout.tmp_item(make_tmp_name(f"evict.{key}"))
        try:
            if not storage.rename_dir(layout.entry(key), target):
                return None
        except FileNotFoundError:
            return None
        return _TakenOut(key, target, None)
    manifest_path = layout.entry_file(key, MANIFEST)
    try:
        manifest = storage.read_bytes(manifest_path)
    except FileNotFoundError:
        return None
    storage.remove_file(manifest_path)
    return _TakenOut(key, None, manifest)


class Eviction(enum.Enum):
    EVICTED = "evicted"
    IN_USE = "in use"
    ABSENT = "absent"


def evict(layout: Layout, key: str, *, foreign_ttl: float, force: bool = False) -> Eviction:
    """Remove a published entry unless a live reader holds it (or ``force``).

    The caller holds the fingerprint's lock, so no writer publishes it meanwhile.
    """
    return evict_many(layout, [key], foreign_ttl=foreign_ttl, force=force)[key]


def evict_many(
    layout: Layout,
    keys: Collection[str],
    *,
    foreign_ttl: float = DEFAULT_FOREIGN_TTL,
    force: bool = False,
) -> dict[str, Eviction]:
    """`evict` for several entries under one eviction notice (one scan of the usage records).

    The caller holds every key's lock.
    """
    if force:  # whoever reads them: no notice, no usage record read
        return {key: _destroy(layout, key) for key in keys}
    outcomes: dict[str, Eviction] = {}
    with eviction_notice(layout, keys, foreign_ttl=foreign_ttl) as read:
        for key in keys:
            outcomes[key] = Eviction.IN_USE if key in read else _destroy(layout, key)
    return outcomes


def _destroy(layout: Layout, key: str) -> Eviction:
    """Unpublish an entry, then remove its files."""
    taken = _take_out(layout, key)
    if taken is None:
        return Eviction.ABSENT
    if taken.moved_to is not None:
        layout.storage.remove_tree(taken.moved_to)
    elif _has_files(taken.manifest):  # (a record without files leaves nothing to list)
        layout.storage.remove_tree(layout.entry(key))
    return Eviction.EVICTED


def _has_files(manifest: bytes | None) -> bool:
    try:
        return manifest is None or bool(Manifest.from_bytes(manifest, where="").files)
    except (ManifestError, CacheFormatError):
        return True


def quarantine(layout: Layout, key: str, judged: bytes | None = None) -> str | None:
    """Move an entry to ``quarantine/``; return where, or None if it was already gone.

    ``judged`` is the manifest of the entry found corrupt: if the folder moved
    turns out to hold another one (republished meanwhile), it is put back.
    """
    storage = layout.storage
    storage.makedirs(layout.quarantine)
    name = make_quarantine_name(key)
    target = layout.quarantine_item(name)
    if storage.is_local:
        try:
            if not storage.rename_dir(layout.entry(key), target):
                return None
        except FileNotFoundError:
            return None
        if judged is not None and _manifest_of(layout, target) not in (judged, None):
            with contextlib.suppress(OSError):
                if storage.rename_dir(target, layout.entry(key)):
                    return None
        return target
    taken = _take_out(layout, key)
    if taken is None:
        return None
    source = layout.entry(key)
    for file in storage.listdir(source):
        with contextlib.suppress(FileNotFoundError):
            storage.move_file(layout.entry_file(key, file), layout.quarantine_item(name, file))
    if taken.manifest is not None:
        storage.makedirs(layout.quarantine_item(name))  # (no file may have been moved there)
        storage.write_bytes(layout.quarantine_item(name, MANIFEST), taken.manifest)
    storage.remove_tree(source)
    return target


def _manifest_of(layout: Layout, folder: str) -> bytes | None:
    try:
        return layout.storage.read_bytes(layout.storage.child(folder, MANIFEST))
    except (FileNotFoundError, NotADirectoryError):
        return None
