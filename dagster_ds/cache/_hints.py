"""Hints: entries known from a record read earlier, and named pointers to the latest record.

A record that embeds its entries' manifests (a stored version) names entries a
new computation of the same data will ask for again: a source loaded after a
file was appended asks for every unchanged group of files. Within `recorded`,
a lookup of such a key opens the entry as the record says, reading nothing;
its files are checked when read, like any entry's, so a hint that is stale (the
entry evicted or quarantined since) costs a recomputation, never wrong rows.

A *ref* (``<root>/refs/<name>``) is a small object naming the key of the latest
record of something (a source's stored version), replaced whole by one write
and never locked: it is a hint too. Two writers racing leave one of their keys,
and a reader that finds a ref gone or naming nothing useful looks entries up
one by one, as without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Mapping
from contextvars import ContextVar
from types import MappingProxyType

from dagster_ds.cache._json import JSONValue
from dagster_ds.cache._layout import is_fingerprint
from dagster_ds.cache._storage import Storage

_REFS = "refs"

#: Manifests known from records, by store identity, then by entry key.
_RECORDED: ContextVar[Mapping[str, Mapping[str, Mapping[str, JSONValue]]]] = ContextVar(
    "dagster_ds_recorded_entries", default=MappingProxyType({})
)


@contextlib.contextmanager
def recorded(storage: Storage, manifests: Mapping[str, Mapping[str, JSONValue]]) -> Generator[None]:
    """Within the block (this thread or task), ``manifests`` are known entries of ``storage``."""
    known = dict(_RECORDED.get())
    known[storage.identity] = {**known.get(storage.identity, {}), **manifests}
    token = _RECORDED.set(MappingProxyType(known))
    try:
        yield
    finally:
        _RECORDED.reset(token)


def recorded_manifest(storage: Storage, key: str) -> Mapping[str, JSONValue] | None:
    """The manifest of ``key`` a `recorded` block made known for ``storage``, or None."""
    return _RECORDED.get().get(storage.identity, {}).get(key)


def read_ref(storage: Storage, name: str) -> str | None:
    """The key the ref ``name`` names, or None if there is none (or it is unreadable)."""
    try:
        text = storage.read_bytes(storage.join(_REFS, name)).decode(errors="replace").strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    return text if is_fingerprint(text) else None


def write_ref(storage: Storage, name: str, key: str) -> None:
    """Point the ref ``name`` at ``key`` (one write; the last writer wins)."""
    folder = storage.join(_REFS)
    storage.makedirs(folder)
    storage.replace_bytes(storage.child(folder, name), f"{key}\n".encode())
