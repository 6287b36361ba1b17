"""Roll a dataset asset back: record an earlier stored version as its latest materialization.

A rollback is a metadata operation. The earlier version's data is still in the
store (content-addressed, never rewritten), so rolling back copies nothing: it
reports a materialization of the asset that carries that version's metadata
and data version, tagged ``dagster_ds/rollback``. Downstream assets load the
latest materialization, so they read the rolled-back rows; their recorded
input data versions differ from it, so Dagster shows them stale exactly as if
the asset had recomputed that version. Retention keeps the version: it is the
latest recorded one.

A rollback holds until the asset runs again: a refresh computes the recipe of
the code and inputs it has then, so revert the code (or the input) that made
the bad version too, or the next refresh brings that version back (from the
store, without computing it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg

from dagster_ds.errors import DatasetNotStoredError, InvalidFingerprintError
from dagster_ds.hub import PushResult
from dagster_ds.orchestration._execution import CHANGED_KEY
from dagster_ds.orchestration._history import kept_metadata, kept_tags
from dagster_ds.orchestration.io_manager import DatasetStore, fingerprints_of
from dagster_ds.orchestration.metadata import DatasetMetadataKey, recorded_value
from dagster_ds.orchestration.resource import HubResource, HubTarget

__all__ = [
    "ROLLBACK_TAG",
    "Rollback",
    "find_rollback",
    "hub_of_description",
    "record_rollback",
    "republish_rollback",
]

ROLLBACK_TAG = "dagster_ds/rollback"
_MIN_PREFIX = 6


@dataclass(frozen=True)
class Rollback:
    """A rollback of one asset to one of its stored versions.

    Attributes:
        asset: The asset key.
        partition: The partition, for a partitioned asset.
        recipe: The recipe fingerprint of the version made latest.
        data_version: Its content fingerprint (the data version).
        replaced: The recipe fingerprint of the version that was latest, if any.
        version: The earlier materialization that recorded the version.
    """

    asset: dg.AssetKey
    partition: str | None
    recipe: str
    data_version: str
    replaced: str | None
    version: dg.AssetMaterialization

    @property
    def note(self) -> str:
        """``rolled back from <replaced> to <recipe>``."""
        was = f" from {self.replaced}" if self.replaced else ""
        return f"rolled back{was} to {self.recipe}"

    @property
    def hub_target(self) -> str | None:
        """Where the version was pushed (``repo:config/split@rev on HUB``), if it was."""
        target = recorded_value(self.version.metadata, DatasetMetadataKey.HUB_TARGET)
        return target if isinstance(target, str) else None


def find_rollback(
    instance: dg.DagsterInstance,
    store: DatasetStore,
    key: dg.AssetKey,
    reference: str,
    *,
    partition: str | None = None,
) -> Rollback:
    """The rollback of ``key`` to the stored version ``reference`` names; nothing recorded yet.

    Args:
        instance: The Dagster instance whose history holds the asset's materializations.
        store: The store the asset's versions are in.
        key: The asset.
        reference: The version's recipe or content fingerprint, or a unique start
            of one (at least 6 characters).
        partition: The partition, for a partitioned asset.

    Raises:
        DatasetNotStoredError: No earlier materialization records such a version,
            or the store no longer holds it (gc removed it).
        InvalidFingerprintError: The reference is too short or names several versions.

    Example:
        >>> found = find_rollback(instance, store, dg.AssetKey("a"), "5f0c22a9")  # doctest: +SKIP
        >>> record_rollback(instance, found)  # doctest: +SKIP
    """
    name = key.to_user_string()
    wanted = reference.rstrip("…").lower()
    if len(wanted) < _MIN_PREFIX:
        raise InvalidFingerprintError(
            f"{reference!r}: give at least {_MIN_PREFIX} characters of a recipe or content"
            f" fingerprint of a version of asset {name!r}."
        )
    chosen = _matching_materialization(instance, key, partition, wanted, name)
    recipe, content = fingerprints_of(chosen) or ("", None)
    if not store.contains(key, recipe):
        raise DatasetNotStoredError(
            f"Version {recipe} of asset {name!r} is no longer in the store {store.root!r}:"
            " garbage collection removed it, so it cannot be rolled back to. Roll back to a"
            " version that is stored (list them with 'dagster-ds cache ls --store"
            f" {store.root}'), or rematerialize the asset from the code that made it."
        )
    latest = next(_history(instance, key, partition), None)
    latest_fingerprints = fingerprints_of(latest) if latest is not None else None
    replaced = latest_fingerprints[0] if latest_fingerprints is not None else None
    data_version = content or (chosen.tags or {}).get("dagster/data_version") or recipe
    return Rollback(key, partition, recipe, data_version, replaced, chosen)


def record_rollback(
    instance: dg.DagsterInstance, rollback: Rollback, pushed: PushResult | None = None
) -> dg.AssetMaterialization:
    """Report the rolled-back version as the asset's latest materialization (with ``pushed``).

    The materialization carries the version's metadata and its data, code and
    input versions, so Dagster sees the asset and its children as it would had
    the asset computed that version; it is tagged ``dagster_ds/rollback``.
    """
    metadata: dict[str, Any] = {
        **kept_metadata(rollback.version.metadata),
        CHANGED_KEY: rollback.note,
        ROLLBACK_TAG: rollback.note,
    }
    if pushed is not None:
        metadata[DatasetMetadataKey.HUB_PUSH.value] = (
            "skipped (unchanged)" if pushed.skipped else "pushed"
        )
        metadata[DatasetMetadataKey.HUB_URL.value] = dg.MetadataValue.url(pushed.commit_url)
        metadata[DatasetMetadataKey.HUB_COMMIT.value] = pushed.commit_oid
    materialization = dg.AssetMaterialization(
        asset_key=rollback.asset,
        partition=rollback.partition,
        description=f"Rollback of {rollback.asset.to_user_string()}: {rollback.note}.",
        metadata=metadata,
        tags={
            **kept_tags(rollback.version.tags or {}, same_instance=True),
            ROLLBACK_TAG: rollback.recipe,
        },
    )
    instance.report_runless_asset_event(materialization)
    return materialization


def republish_rollback(
    store: DatasetStore, rollback: Rollback, hub: HubResource
) -> PushResult | None:
    """Push the rolled-back version where it was pushed, in one commit titled as a rollback.

    Returns None when the version was never pushed to the Hub. ``hub`` must be
    ready (inside its ``yield_for_execution``), as in a step.
    """
    described = rollback.hub_target
    if described is None:
        return None
    name = rollback.asset.to_user_string()
    dataset = store.load_as_stored(rollback.asset, rollback.recipe)
    return hub.push(
        dataset,
        hub_target_from_description(described),
        commit_message=f"Rollback {name} to {rollback.recipe[:12]}",
        commit_description=(
            f"dagster-ds rollback of asset {name}: {rollback.note}"
            f" (data version {rollback.data_version})."
        ),
    )


def _matching_materialization(
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    partition: str | None,
    wanted: str,
    name: str,
) -> dg.AssetMaterialization:
    """The newest materialization of each recipe ``wanted`` starts; exactly one recipe."""
    found: dict[str, dg.AssetMaterialization] = {}
    for materialization in _history(instance, key, partition):
        fingerprints = fingerprints_of(materialization)
        if fingerprints is None or materialization.metadata.get(ROLLBACK_TAG) is not None:
            continue
        recipe, content = fingerprints
        if any(value.startswith(wanted) for value in (recipe, content) if value):
            found.setdefault(recipe, materialization)
    if not found:
        where = f" partition {partition!r} of" if partition is not None else ""
        raise DatasetNotStoredError(
            f"No materialization of{where} asset {name!r} in this Dagster instance records a"
            f" version whose recipe or content fingerprint starts with {wanted!r}. The asset's"
            " page lists its materializations and their data versions."
        )
    if len(found) > 1:
        raise InvalidFingerprintError(
            f"{wanted!r} starts {len(found)} versions of asset {name!r}"
            f" ({', '.join(sorted(found))}); give more characters."
        )
    return next(iter(found.values()))


def hub_target_from_description(described: str) -> HubTarget:
    """The `HubTarget` that ``HubTarget.describe()`` wrote (``repo:config/split@rev on HUB``)."""
    pushed_to = described.split(" on ", 1)[0]
    repo_id, _, rest = pushed_to.partition(":")
    config_and_split, _, revision = rest.partition("@")
    config_name, _, split = config_and_split.partition("/")
    return HubTarget(
        repo_id,
        config_name=config_name or "default",
        split=None if split in ("", "*") else split,
        revision=None if revision in ("", "main") else revision,
    )


def hub_of_description(described: str, token: str | None) -> HubResource:
    """The `HubResource` a recorded target names: a URL (with ``token``) or the embedded Hub."""
    hub = described.split(" on ", 1)[1] if " on " in described else ""
    embedded = "embedded local Hub in "
    if hub.startswith(embedded):
        return HubResource(local_data_dir=hub[len(embedded) :])
    return HubResource(endpoint=hub or None, token=token)


def _history(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None
) -> Iterator[dg.AssetMaterialization]:
    """The materializations of ``key`` (``partition``), newest first, a page at a time."""
    cursor: str | None = None
    while True:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=key, asset_partitions=[partition] if partition is not None else None
            ),
            limit=100,
            cursor=cursor,
        )
        for record in result.records:
            if record.asset_materialization is not None:
                yield record.asset_materialization
        if not result.has_more:
            return
        cursor = result.cursor
