"""Why a dataset asset ran: its recipe's hash tree, stored per version, and what changed.

Each stored asset version keeps the hash tree of its recipe: the function (its
code and every global, closure variable and helper it uses), the config class,
each parent's data version, each config value, the configuration of the
resources it requires and its declared ``fingerprint_inputs``. When an asset
runs, its new tree is compared with the tree of its previous materialization
(read from the store, so this works in any process) and the differences are
said in words::

    global 'MIN_WORDS' (used by is_prose): 8 → 10
    parent 'paragraphs': new data version (60d573e8… → 1f0c22a9…)
    config 'factor': 1 → 2
    function code changed

A parent's new data version is said column by column too, from the two
parent versions' records alone (`dagster_ds.arrow.changed_shards`: shard
fingerprints, then the column fingerprints their entries recorded; no row
read)::

    parent 'labelled': column 'label' changed in 1 of 20 shards

Each stored asset version records the store keys of the parent versions it was
computed from (``parent_versions``), so the next run, or ``dagster-ds hash
explain``, finds the parent's version before; of a parent stored in another
store, it carries what comparing it needs of its record (``parent_records``).
Shards whose entries recorded no column fingerprints are counted without naming
columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import dagster as dg

from dagster_ds.arrow import VERSION_KIND, ShardChanges, changed_shards, version_record
from dagster_ds.cache import CacheEntry, CacheStore
from dagster_ds.fingerprint import Difference, Hasher, HashNode, explain
from dagster_ds.orchestration.io_manager import PARENT_RECORDS, PARENT_VERSIONS, DatasetStore
from dagster_ds.orchestration.metadata import DatasetMetadataKey, recorded_value
from dagster_ds.orchestration.versioning import config_shape

__all__ = [
    "PARENT_VERSIONS",
    "ParentVersion",
    "carried_parent_records",
    "column_changes",
    "describe_changes",
    "explain_differences",
    "recipe_tree",
    "stored_version",
]

NOTHING_CHANGED = "nothing changed (recipe unchanged, already stored)"
_SHORT = 12


def recipe_tree(
    fingerprint: str,
    function: Callable[..., Any],
    config_type: type | None,
    parents: Mapping[str, str],
    config: Mapping[str, Any] | None,
    hidden: Mapping[str, HashNode],
    version_salt: str | None = None,
    partition: str | None = None,
) -> HashNode:
    """The hash tree of an asset's recipe, for explanations; its digest is ``fingerprint``."""
    components: dict[str, HashNode] = {"function": Hasher.describe(function)}
    if config_type is not None:
        components["config class"] = Hasher.describe(config_shape(config_type))
    if version_salt is not None:
        components["version_salt"] = Hasher.describe(version_salt)
    for name, parent in parents.items():
        components[f"parent '{name}'"] = HashNode("fingerprint", f"parent '{name}'", parent)
    for name, value in (config or {}).items():
        components[f"config '{name}'"] = Hasher.describe(value)
    components.update(hidden)
    if partition is not None:
        components["partition"] = Hasher.describe(partition)
    return HashNode("dataset_asset", "dataset asset recipe", fingerprint, components)


class ParentVersion(Protocol):
    """A parent's version: its store key and its record (a `CacheEntry`, or a plan's forecast)."""

    @property
    def key(self) -> str: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


def describe_changes(
    store: DatasetStore,
    key: dg.AssetKey,
    fingerprint: str,
    tree: HashNode,
    earlier: dg.AssetMaterialization | None,
    parents: Mapping[str, ParentVersion] | None = None,
) -> list[str]:
    """What changed since ``earlier`` (the previous materialization), in words.

    ``parents``: each parent's stored version now (`stored_version`), to say which
    of its columns changed since the version the previous one read.
    """
    if earlier is None:
        return ["first materialization: nothing stored before"]
    previous = recorded_value(earlier.metadata, DatasetMetadataKey.RECIPE)
    if not isinstance(previous, str):
        return ["the previous materialization recorded no recipe"]
    if previous == fingerprint:
        return [
            f"same recipe {fingerprint[:_SHORT]}… as before, but that version is no longer"
            " stored (removed, or damaged and quarantined): recomputed"
        ]
    record = version_record(store.cache, store.version_key(key, previous)) or {}
    old = record.get("hash_tree")
    if not isinstance(old, dict):
        return [
            f"new recipe ({previous[:_SHORT]}… → {fingerprint[:_SHORT]}…); the previous"
            " version's hash tree is not stored, so what changed cannot be said"
        ]
    said = explain_differences(HashNode.from_dict(old), tree)
    now = {name: entry.key for name, entry in (parents or {}).items()}
    known = {
        **carried_parent_records(record),
        **{entry.key: entry.metadata for entry in (parents or {}).values()},
    }
    return said + column_changes(store.cache, recorded_parents(record), now, known)


def stored_version(dataset: object) -> CacheEntry | None:
    """The stored version's entry ``dataset`` was opened from (None: not a stored version)."""
    for entry in getattr(dataset, "_mapping_entries", ())[:1]:
        if isinstance(entry, CacheEntry) and entry.metadata_item("kind") == VERSION_KIND:
            return entry
    return None


def recorded_parents(record: Mapping[str, Any]) -> dict[str, str]:
    """The parent versions a version ``record`` names (none for earlier releases')."""
    found = record.get(PARENT_VERSIONS)
    if not isinstance(found, dict):
        return {}
    return {str(name): str(key) for name, key in found.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def carried_parent_records(record: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """What a version ``record`` carries of its parents' records held in other stores, by key."""
    found = record.get(PARENT_RECORDS)
    if not isinstance(found, dict):
        return {}
    return {str(key): value for key, value in found.items() if isinstance(value, dict)}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def column_changes(
    store: CacheStore,
    old: Mapping[str, str],
    new: Mapping[str, str],
    known: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """Which columns of each parent changed, and in how many shards, one sentence a parent.

    ``old`` and ``new``: the store keys of the parents' versions, by parameter.
    Only parents in both, with both versions' records still stored, are said.
    ``known``: version records already read, by key (not read again).

    Example:
        >>> import tempfile
        >>> from dagster_ds.arrow import Dataset, store_version
        >>> store = CacheStore(tempfile.mkdtemp())
        >>> _ = store_version(store, "a" * 32, Dataset.from_dict({"n": [1, 2]}))
        >>> _ = store_version(store, "b" * 32, Dataset.from_dict({"n": [1, 3]}))
        >>> column_changes(store, {"rows": "a" * 32}, {"rows": "b" * 32})
        ["parent 'rows': changed in 1 of 1 shards"]
    """
    sentences: list[str] = []
    for name, key in new.items():
        before = old.get(name)
        if before is None or before == key:
            continue
        records = [(known or {}).get(each) or version_record(store, each) for each in (before, key)]
        if records[0] is None or records[1] is None:
            continue
        said = _shard_words(changed_shards(store, records[0], records[1]))
        if said:
            sentences.append(f"parent '{name}': {said}")
    return sentences


def _shard_words(found: ShardChanges) -> str:
    """``column 'label' changed in 1 of 20 shards`` (and the shards whose columns are untold)."""
    of = f"of {found.shards} shards"
    parts = [
        f"column {column!r} changed in {count} {of}"
        for column, count in sorted(found.columns.items())
    ]
    if found.unrecorded and parts:
        parts.append(f"{found.unrecorded} other {of} changed (no column fingerprints recorded)")
    elif found.unrecorded:
        parts.append(f"changed in {found.unrecorded} {of}")
    return ", ".join(parts)


def explain_differences(old: HashNode, new: HashNode) -> list[str]:
    """The differences between two recipe trees, one sentence each."""
    explanation = explain(old, new)
    if explanation.same:
        return ["nothing changed"]
    return [_sentence(difference, old, new) for difference in explanation.differences]


def _sentence(difference: Difference, old: HashNode, new: HashNode) -> str:
    path = difference.path
    before, after = _node(old, path), _node(new, path)
    if not path:
        return f"recipe changed ({_value(before)} → {_value(after)})"
    head = path[0]
    if head.startswith("parent '"):
        if difference.change == "added":
            return f"new {head}"
        if difference.change == "removed":
            return f"{head} removed"
        return f"{head}: new data version ({_short(before)} → {_short(after)})"
    if head == "function":
        return _function_sentence(difference, path[1:], before, after)
    if head.startswith("resource '") and len(path) > 1:
        return _change(f"{head} {' '.join(path[1:])}", difference, before, after)
    return _change(head if len(path) == 1 else " → ".join(path), difference, before, after)


def _function_sentence(
    difference: Difference, inner: tuple[str, ...], before: HashNode | None, after: HashNode | None
) -> str:
    helpers = [_helper(part) for part in inner[:-1]]
    where = f" (used by {' → '.join(helpers)})" if helpers else ""
    if not inner:
        return "function code changed"
    last = inner[-1]
    if last == "code":
        return "function code changed" if not helpers else f"code of {' → '.join(helpers)} changed"
    return _change(last, difference, before, after) + where


def _change(
    what: str, difference: Difference, before: HashNode | None, after: HashNode | None
) -> str:
    if difference.change == "added":
        return f"{what} added ({_value(after)})"
    if difference.change == "removed":
        return f"{what} removed (was {_value(before)})"
    return f"{what}: {_value(before)} → {_value(after)}"


def _helper(part: str) -> str:
    """``global 'is_prose'`` → ``is_prose``."""
    for prefix in ("global '", "closure variable '", "default '", "attribute '"):
        if part.startswith(prefix):
            return part[len(prefix) : -1]
    return part


def _node(tree: HashNode, path: tuple[str, ...]) -> HashNode | None:
    node: HashNode | None = tree
    for part in path:
        node = node.components.get(part) if node is not None else None
    return node


def _value(node: HashNode | None) -> str:
    """A node's value when small and printable (its label), else its hash."""
    if node is None:
        return "nothing"
    label = node.label
    printable = node.kind == "value" and not label.startswith("<") and not label.endswith("...")
    return label if printable and label.isprintable() else _short(node)


def _short(node: HashNode | None) -> str:
    return "nothing" if node is None else f"{node.digest[:_SHORT]}…"
