"""What changed since the asset's previous version: numbers on every materialization.

Each materialization of a dataset asset records, as numbers Dagster plots on
the asset page:

- ``dagster_ds/rows_added`` and ``dagster_ds/rows_removed``: rows with no
  equal row in the previous version, and the other way round;
- ``dagster_ds/columns_changed``: the columns whose values changed, plus
  those added, removed or retyped;
- ``dagster_ds/shards_reused`` and ``dagster_ds/shards_new``: the version's
  shards stored before the step began, and those it stored;
- ``dagster_ds/seconds_saved``: the recorded compute time of the reused shards.

The diff reads only the shards that differ from the previous version's (see
`dagster_ds.arrow.diff_versions`): a refresh that changed one shard hashes the
rows of that shard and of the one it replaced, nothing else. A first
materialization counts every row as added; one whose previous version is gone
from the store records the shard counts only.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import dagster as dg

from dagster_ds.arrow import diff_records, version_record
from dagster_ds.errors import CacheError, DatasetReleasedError
from dagster_ds.orchestration.io_manager import DatasetStore

ROWS_ADDED = "dagster_ds/rows_added"
ROWS_REMOVED = "dagster_ds/rows_removed"
COLUMNS_CHANGED = "dagster_ds/columns_changed"
SHARDS_REUSED = "dagster_ds/shards_reused"
SHARDS_NEW = "dagster_ds/shards_new"
SECONDS_SAVED = "dagster_ds/seconds_saved"
DIFF = "dagster_ds/diff"
#: Every key this module writes: never copied from an earlier materialization.
DIFF_KEYS = frozenset(
    {ROWS_ADDED, ROWS_REMOVED, COLUMNS_CHANGED, SHARDS_REUSED, SHARDS_NEW, SECONDS_SAVED, DIFF}
)
# The metadata item of an entry recording its compute time (dagster_ds.arrow's `run`).
_SECONDS = "seconds"


def with_diff_summary(
    described: Mapping[str, Any],
    store: DatasetStore,
    asset_key: dg.AssetKey,
    fingerprints: tuple[str, str | None],
    began: datetime.datetime,
) -> dict[str, Any]:
    """``described`` with the diff summary of the version stored under ``fingerprints[0]``.

    ``fingerprints``: the recipe of the version this step records and of the
    previous one (None: the first). ``began``: when the step began; the
    version's shards stored before then were reused.
    """
    kept = {name: value for name, value in described.items() if name not in DIFF_KEYS}
    fingerprint, previous = fingerprints
    record = version_record(store.cache, store.version_key(asset_key, fingerprint))
    if record is None:
        return kept
    summary = _shard_counts(record, began)
    if previous is None:
        summary.update(_counts(int(record.get("num_rows", 0)), 0, 0, "first version"))
    elif previous == fingerprint:
        summary.update(_counts(0, 0, 0, "same version as before"))
    else:
        summary.update(_changes(store, asset_key, previous, record))
    return {**kept, **summary}


def _shard_counts(record: Mapping[str, Any], began: datetime.datetime) -> dict[str, Any]:
    """Shards stored before ``began`` (reused) and after, and the reused ones' compute time."""
    embedded = record.get("entries")
    manifests: Mapping[str, Any] = embedded if isinstance(embedded, dict) else {}
    reused = new = 0
    saved = 0.0
    for reference in record.get("shards", []):
        own = [manifests.get(reference["table"]), manifests.get(reference.get("rows") or "")]
        found = [manifest for manifest in own if isinstance(manifest, dict)]
        if found and all(_created(manifest) < began for manifest in found):
            reused += 1
            saved += sum(_seconds(manifest) for manifest in found)
        else:
            new += 1
    return {
        SHARDS_REUSED: dg.MetadataValue.int(reused),
        SHARDS_NEW: dg.MetadataValue.int(new),
        SECONDS_SAVED: dg.MetadataValue.float(round(saved, 6)),
    }


def _created(manifest: Mapping[str, Any]) -> datetime.datetime:
    return datetime.datetime.fromisoformat(str(manifest["created"]))


def _seconds(manifest: Mapping[str, Any]) -> float:
    metadata = manifest.get("metadata")
    value = metadata.get(_SECONDS) if isinstance(metadata, dict) else None
    return float(value) if isinstance(value, int | float) else 0.0


def _changes(
    store: DatasetStore, asset_key: dg.AssetKey, previous: str, record: Mapping[str, Any]
) -> dict[str, Any]:
    """The row and column counts against the previous version; none if it is gone."""
    before = version_record(store.cache, store.version_key(asset_key, previous))
    gone = {DIFF: dg.MetadataValue.text(f"previous version {previous[:12]}… not stored")}
    if before is None:  # removed by retention or gc
        return gone
    try:
        found = diff_records(store.cache, before, record, samples=0)
    except (DatasetReleasedError, CacheError):  # an entry it needs was removed meanwhile
        return gone
    schema = found.schema
    columns = [f"{name} ({count})" for name, count in found.columns_changed.items()]
    columns += [f"+{name}" for name in schema.added]
    columns += [f"-{name}" for name in schema.removed]
    columns += [f"{name}: {old} → {new}" for name, (old, new) in schema.retyped.items()]
    changed = len(found.columns_changed) + len(schema.added) + len(schema.removed)
    changed += len(schema.retyped)
    text = f"against {previous[:12]}…: columns {', '.join(columns) or 'unchanged'}"
    return _counts(found.rows_added, found.rows_removed, changed, text)


def _counts(added: int, removed: int, columns: int, text: str) -> dict[str, Any]:
    return {
        ROWS_ADDED: dg.MetadataValue.int(added),
        ROWS_REMOVED: dg.MetadataValue.int(removed),
        COLUMNS_CHANGED: dg.MetadataValue.int(columns),
        DIFF: dg.MetadataValue.text(f"+{added} rows, -{removed} rows; {text}"),
    }
