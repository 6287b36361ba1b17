"""A row-local transform's outputs in one record: a cached rerun is one read, an append two.

A map or filter over N shards has N output entries, each under the transform
rebased on its input shard. Once they exist, the transform's *outputs record*
is written: one entry without files, keyed by the transform's fingerprint
(which names its whole input dataset), whose metadata embeds every output
entry's manifest. A new process running the same transform on the same dataset
reads that record and opens the N entries from it (`CacheStore.known_entry`):
one read, and nothing more until rows are read.

After the input changes (a file appended), the transform's fingerprint is new
and has no record yet. The transform's *index*, keyed by the transform alone
(its hash tree rebased on no parent), names the records of its latest runs
(one per input it ran on: a `DatasetDict`'s splits share it): the outputs of
the shards that did not change are found in one of them.

Records are hints, never trusted for rows. An output is looked up by its own
key, content-addressed from the transform and its input shard, so a record only
says which entries existed; each entry's files are checked when read, and one
damaged or gone by then is computed again (see `open_table_shard`). A record or
index that is stale, or lost to a concurrent writer, costs lookups, not results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dagster_ds.arrow._results import Transform
from dagster_ds.arrow._stored import derived_key
from dagster_ds.cache import CacheEntry, CacheStore
from dagster_ds.fingerprint import rebase_transform

#: Records an index names: enough for a few datasets (splits) one transform runs on.
INDEX_SIZE = 8
_NO_PARENT = "0" * 32
_MISSING = object()


@dataclass
class OutputsRecord:
    """The outputs a transform's record (or its index) knows, and how to record new ones.

    Attributes:
        transform: The transform over a whole dataset.
        manifests: Known output entries' manifests, by output key.
        exact: Whether ``manifests`` is the record of this very transform
            (else from an earlier input, found through the index).
        indexed: The records the index named when read (None: not read).
    """

    transform: Transform
    manifests: dict[str, dict[str, Any]]
    exact: bool
    indexed: list[str] | None = None

    @classmethod
    def read(cls, store: CacheStore, transform: Transform, keys: Sequence[str]) -> OutputsRecord:
        """What ``store`` records of ``transform``'s outputs (``keys``, the ones wanted).

        One read when the transform's own record exists; otherwise the index
        and then its records, newest first, up to the first that names any of
        ``keys``. If none does (every input shard changed), the newest record:
        its outputs may still be reused by the columns they read (`_column_reuse`).
        """
        own = _outputs(store, record_key(transform))
        if own is not None:
            return cls(transform, own, exact=True)
        wanted = set(keys)
        indexed = _indexed(store, transform)
        newest: dict[str, dict[str, Any]] | None = None
        for key in indexed:
            found = _outputs(store, key)
            if found is not None and not wanted.isdisjoint(found):
                return cls(transform, found, exact=False, indexed=indexed)
            newest = found if newest is None else newest
        return cls(transform, newest or {}, exact=False, indexed=indexed)

    def entry(self, store: CacheStore, key: str) -> CacheEntry | None:
        """The output entry under ``key`` as recorded (nothing read), or None if not recorded."""
        manifest = self.manifests.get(key)
        return store.known_entry(key, manifest) if manifest is not None else None

    def write(self, store: CacheStore, manifests: Sequence[Mapping[str, Any]]) -> None:
        """Record ``manifests`` (of every output, in order) as the transform's outputs.

        Its record is replaced if it exists (some output was not as it says);
        the index then names this record first.
        """
        key = record_key(self.transform)
        if self.exact:
            store.remove(key, force=True)
        with store.writer(key, metadata=_record(self.transform, manifests)):
            pass
        indexed = self.indexed if self.indexed is not None else _indexed(store, self.transform)
        if indexed[:1] == [key]:
            return
        names = [key, *(name for name in indexed if name != key)]
        index = index_key(self.transform)
        store.remove(index, force=True)
        metadata = {"kind": "transform-index", "records": names[:INDEX_SIZE]}
        with store.writer(index, metadata=metadata):
            pass


def record_key(transform: Transform) -> str:
    """The key of the outputs record of ``transform`` (over one whole dataset)."""
    return derived_key("transform-outputs", transform.fingerprint)


def index_key(transform: Transform) -> str:
    """The key of ``transform``'s index: the same whatever dataset it runs on."""
    assert transform.tree is not None, "an unhashable transform has no index"
    return derived_key("transform-index", rebase_transform(transform.tree, _NO_PARENT))


def _record(transform: Transform, manifests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The record's metadata: each manifest with the metadata items all share stored once.

    The outputs of one transform share their hash tree, features and kind: what
    makes most of a manifest's size.
    """
    shared: dict[str, Any] = dict(manifests[0]["metadata"]) if manifests else {}
    for manifest in manifests[1:]:
        metadata = manifest["metadata"]
        for name in [
            name for name, value in shared.items() if metadata.get(name, _MISSING) != value
        ]:
            del shared[name]
    outputs = [
        {
            **manifest,
            "metadata": {
                name: value for name, value in manifest["metadata"].items() if name not in shared
            },
        }
        for manifest in manifests
    ]
    return {
        "kind": "transform-outputs",
        "transform": transform.name,
        "parents": list(transform.parents),
        "shared": shared,
        "outputs": outputs,
    }


def _outputs(store: CacheStore, key: str) -> dict[str, dict[str, Any]] | None:
    """The manifests the record under ``key`` embeds, by key; None if there is none."""
    manifest = store.manifest(key)
    if manifest is None or manifest.metadata.get("kind") != "transform-outputs":
        return None
    shared, outputs = manifest.metadata.get("shared"), manifest.metadata.get("outputs")
    if not isinstance(shared, dict) or not isinstance(outputs, list):
        return None
    found: dict[str, dict[str, Any]] = {}
    for output in outputs:
        if not isinstance(output, dict):
            continue
        own, fingerprint = output.get("metadata"), output.get("fingerprint")
        if isinstance(own, dict) and isinstance(fingerprint, str):
            found[fingerprint] = {**output, "metadata": {**shared, **own}}
    return found


def _indexed(store: CacheStore, transform: Transform) -> list[str]:
    """The records ``transform``'s index names, newest first."""
    manifest = store.manifest(index_key(transform))
    names = manifest.metadata.get("records") if manifest is not None else None
    if manifest is None or manifest.metadata.get("kind") != "transform-index":
        return []
    return [name for name in names if isinstance(name, str)] if isinstance(names, list) else []
