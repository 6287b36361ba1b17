"""Outputs copied from another store are recorded there as their transform's outputs.

A version stored from another store's entries (a promote) copies each shard's
table entry under its own key, with what its function read and the column
fingerprints (`_stored.carried_metadata`), and a filter's kept positions under
their own key with their records (`_stored.adopt`). A later run of the same transform
over a changed input finds outputs to reuse by their read columns only among
those its outputs record names, through the transform's index
(`_output_records`): without a record in the target store, the copies would be
found by their own keys (an unchanged input shard) but never by their columns.

The copies' entries say which transform made them (its name and hash tree, the
same for every output of it over one dataset), so the record and index are
written in the target store as that transform's run there would have written
them, naming the copies' own manifests. A transform the target store already
records is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dagster_ds.arrow._output_records import OutputsRecord, record_key
from dagster_ds.arrow._results import Transform
from dagster_ds.cache import CacheEntry, CacheStore
from dagster_ds.fingerprint import HashNode

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset


def record_copied_outputs(store: CacheStore, dataset: Dataset) -> int:
    """Record in ``store`` the transforms whose outputs ``dataset``'s shards are; how many.

    ``dataset``: as opened from the store its shards were copied from (their
    entries' metadata is known from there: no file is read). Only the outputs
    of maps and filters (which recorded their reads) held in ``store`` count.

    Example:
        >>> import tempfile
        >>> from dagster_ds.arrow import Dataset
        >>> record_copied_outputs(CacheStore(tempfile.mkdtemp()), Dataset.from_dict({"a": [1]}))
        0
    """
    made: dict[str, tuple[Transform, list[str]]] = {}
    for entry in _outputs(dataset):
        tree, name = entry.metadata_item("hash_tree"), entry.metadata_item("transform")
        if not isinstance(tree, dict) or not isinstance(name, str):
            continue
        if "column_reads" not in entry.metadata:
            continue  # not a map's or filter's output
        node = HashNode.from_dict(tree)  # pyright: ignore[reportUnknownArgumentType]
        transform = made.setdefault(node.digest, (Transform(name, (), node.digest, node), []))
        if entry.key not in transform[1]:
            transform[1].append(entry.key)
    recorded = 0
    for transform, keys in made.values():
        if store.manifest(record_key(transform)) is not None:
            continue
        manifests: list[dict[str, Any]] = []
        for key in keys:
            manifest = store.manifest(key)
            if manifest is not None:
                manifests.append(dict(manifest.to_json()))
        if manifests:
            OutputsRecord(transform, {}, exact=False).write(store, manifests)
            recorded += 1
    return recorded


def _outputs(dataset: Dataset) -> list[CacheEntry]:
    """The entries ``dataset``'s shards are made of: tables, and filters' kept positions."""
    found: list[CacheEntry] = []
    for shard in dataset._shards:  # pyright: ignore[reportPrivateUsage]
        if shard.table_entry is not None:
            found.append(shard.table_entry)
        found += [entry for entry in shard.entries if entry.metadata_item("kind") == "indices"]
    return found


def comparable_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """What `changed_shards` reads of a version ``record``: to compare it from another store.

    Its features, shards and mapping, and of the entries its shards name (tables
    and their bases) only the column fingerprints they recorded: no file is named
    that the other store would have to hold.

    Example:
        >>> comparable_record({"features": [], "shards": [], "mapping": None, "size": 1})
        {'features': [], 'shards': [], 'mapping': None, 'entries': {}}
    """
    shards = record.get("shards")
    references: list[Any] = list(shards) if isinstance(shards, list) else []  # pyright: ignore[reportUnknownArgumentType]
    embedded = record.get("entries")
    manifests: Mapping[str, Any] = embedded if isinstance(embedded, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    entries: dict[str, Any] = {}
    for reference in references:
        if not isinstance(reference, dict):
            continue
        bases = reference.get("bases")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        for key in [reference.get("table"), *(bases if isinstance(bases, list) else [])]:  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            manifest = manifests.get(key) if isinstance(key, str) else None
            metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
            found = metadata.get("column_fingerprints") if isinstance(metadata, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(key, str) and isinstance(found, dict):
                entries[key] = {"metadata": {"column_fingerprints": found}}
    return {
        "features": record.get("features"),
        "shards": references,
        "mapping": record.get("mapping"),
        "entries": entries,
    }
