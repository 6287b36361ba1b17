"""Dataset.cleanup_cache_files: remove cached results derived from a dataset's source."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from dagster_ds.cache import CacheStore

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset


def cleanup_cache_files(dataset: Dataset) -> int:
    """Remove the entries derived from ``dataset``'s source, except those backing it.

    The anchor removes the other cache files in the dataset's cache folder; a
    content-addressed cache has no such folder, so "derived from the same
    source" is read from the parent fingerprints each entry's manifest records.
    Records of a transform's outputs go with them, uncounted.
    """
    store = CacheStore()
    lineage = dataset.lineage
    root = lineage[0].parents[0] if lineage and lineage[0].parents else dataset.fingerprint
    keep = {entry["fingerprint"] for entry in dataset.cache_files}
    children: dict[str, list[str]] = defaultdict(list)
    results: set[str] = set()  # entries with files; the others are records of them
    for info in store.ls():
        if info.files:
            results.add(info.fingerprint)
        parents = info.metadata.get("parents")
        for parent in parents if isinstance(parents, list) else []:
            children[str(parent)].append(info.fingerprint)
    removed = 0
    pending, seen = [root], {root}
    while pending:
        for child in children.get(pending.pop(), []):
            if child in seen:
                continue
            seen.add(child)
            pending.append(child)
            if child not in keep and store.remove(child) and child in results:
                removed += 1
    return removed
