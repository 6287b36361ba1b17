"""What a run will reuse by read columns, said before it runs, from stored records only.

When a stale asset's parents' new versions are stored already, their version
records say which of their columns changed, in how many shards (`changed_shards`,
the words `column_changes` gives the run). The asset's previous version's
record embeds the manifests of its shards' entries, which say what the
transform that made each read (`column_reads`) and wrote (`written`), and under
which key it is found by its read columns (`column_key`, see
`dagster_ds.arrow._column_reuse`). A transform that read none of the changed
columns, over changed shards whose columns are all recorded, finds its old
outputs by their read columns: the run reuses them instead of computing them.

Only the transform whose outputs are the version's shards is seen (the last
one its function applied), and only when its shards' columns changed in
values, not in number of rows or in type (a changed column is then every
column). Nothing is read but version records; no data file. A source's
version not loaded yet is given as forecast from its files (`_source_columns`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster_ds.arrow import ShardChanges, changed_shards, version_record
from dagster_ds.cache import CacheStore

__all__ = ["planned_column_reuse"]


@dataclass
class _Outputs:
    """One transform's outputs among a version's shards: what they read and wrote."""

    kind: str
    written: list[str]
    reads: set[str] = field(default_factory=set[str])
    shards: int = 0
    reusable: bool = True


def planned_column_reuse(
    store: CacheStore,
    previous: Mapping[str, Any],
    old_parents: Mapping[str, str],
    new_parents: Mapping[str, str],
    known: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """What the run will reuse by read columns, one sentence per transform that will.

    Args:
        store: The store the versions are in.
        previous: The record of the asset's version the run replaces.
        old_parents: The parents' versions it was computed from (store keys, by parameter).
        new_parents: The parents' versions the run will read.
        known: Version records already known, by key (not read from ``store``): a
            source's version not loaded yet, as forecast from its files.

    Returns:
        For example ``map writing 'n_chars' reads only 'text': will reuse 1 of 1
        changed shards by their read columns (3 in all)``; nothing when no parent's
        columns are known to have changed, or some changed shard's are not recorded.

    Example:
        >>> import tempfile
        >>> planned_column_reuse(CacheStore(tempfile.mkdtemp()), {}, {}, {})
        []
    """
    changes = _parent_changes(store, old_parents, new_parents, known or {})
    if not changes or any(found.unrecorded for found in changes):
        return []
    changed_columns = {name for found in changes for name in found.columns}
    changed = max(found.changed for found in changes)
    if not changed_columns or not changed:
        return []
    sentences: list[str] = []
    for outputs in _transforms(previous):
        if not outputs.reusable or outputs.reads & changed_columns:
            continue
        reads = ", ".join(repr(name) for name in sorted(outputs.reads)) or "no column"
        made = ", ".join(repr(name) for name in outputs.written)
        what = f"{outputs.kind} writing {made}" if made else outputs.kind
        sentences.append(
            f"{what} reads only {reads}: will reuse {changed} of {changed} changed shards"
            f" by their read columns ({outputs.shards} in all)"
        )
    return sentences


def _parent_changes(
    store: CacheStore,
    old: Mapping[str, str],
    new: Mapping[str, str],
    known: Mapping[str, Mapping[str, Any]],
) -> list[ShardChanges]:
    """How each parent's version changed, for the parents both versions are recorded of."""
    found: list[ShardChanges] = []
    for name, key in new.items():
        before = old.get(name)
        if before is None or before == key:
            continue
        records = [known.get(each) or version_record(store, each) for each in (before, key)]
        if records[0] is None or records[1] is None:
            continue
        found.append(changed_shards(store, records[0], records[1]))
    return found


def _transforms(record: Mapping[str, Any]) -> list[_Outputs]:
    """The transforms whose outputs ``record``'s shards are, from its embedded manifests."""
    entries = record.get("entries")
    shards = record.get("shards")
    if not isinstance(entries, dict) or not isinstance(shards, list):
        return []
    by_transform: dict[str, _Outputs] = {}
    for shard in shards:
        keys = [shard.get("table"), shard.get("rows")] if isinstance(shard, dict) else []
        for key in keys:  # the table's maker, and the filter that kept rows of it
            manifest = entries.get(key) if isinstance(key, str) else None
            metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
            if isinstance(metadata, dict):
                _add(by_transform, metadata)
    return list(by_transform.values())


def _add(by_transform: dict[str, _Outputs], metadata: Mapping[str, Any]) -> None:
    """Count an output entry (its ``metadata``) with its transform's others: maps and filters."""
    tree, kind = metadata.get("hash_tree"), metadata.get("transform")
    if not isinstance(tree, dict) or not isinstance(kind, str) or "column_reads" not in metadata:
        return  # not a map's or filter's output
    reads, written = metadata.get("column_reads"), metadata.get("written")
    digest = str(tree.get("digest"))
    names = [str(name) for name in written] if isinstance(written, list) else []
    outputs = by_transform.setdefault(digest, _Outputs(kind, names))
    outputs.shards += 1
    if isinstance(reads, list):
        outputs.reads.update(str(name) for name in reads)
    reusable = isinstance(reads, list) and isinstance(written, list)
    outputs.reusable = outputs.reusable and reusable and _keyed(metadata, names, outputs)


def _keyed(metadata: Mapping[str, Any], written: Sequence[str], outputs: _Outputs) -> bool:
    """Whether an output is found by its read columns, writing what the others wrote."""
    return isinstance(metadata.get("column_key"), str) and list(written) == outputs.written
