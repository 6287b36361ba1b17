"""Which stores a Dagster instance's dataset assets are in, as their materializations record.

A materialization stored by a `DatasetIOManager` records where the version's
manifest is (``dagster_ds/path``); the store is the folder that path is in.
An asset without such a materialization is in the instance's default store
(``dagster_ds`` in its storage folder), where a `DatasetIOManager` without
``base_dir`` puts it. The command line uses this to look where the assets are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import dagster as dg

from dagster_ds.orchestration.io_manager import default_store_root
from dagster_ds.orchestration.metadata import DatasetMetadataKey


@dataclass(frozen=True)
class InstanceStores:
    """The stores of a Dagster instance's dataset assets.

    Attributes:
        default: The instance's default store (``dagster_ds`` in its storage folder).
        recorded: Each store the assets' latest materializations record, with
            the names of the assets (sorted) whose latest materialization is there.
    """

    default: str
    recorded: Mapping[str, tuple[str, ...]]


def instance_stores(asset: str | None = None) -> InstanceStores:
    """The stores of the instance at ``$DAGSTER_HOME``: of ``asset``, or of every asset."""
    with dg.DagsterInstance.get() as instance:
        keys = (
            [dg.AssetKey.from_user_string(asset)]
            if asset is not None
            else instance.get_asset_keys()
        )
        recorded: dict[str, list[str]] = {}
        for key in keys:
            root = _recorded_store(instance, key)
            if root is not None:
                recorded.setdefault(root, []).append(key.to_user_string())
        return InstanceStores(
            default_store_root(instance),
            {root: tuple(sorted(names)) for root, names in sorted(recorded.items())},
        )


def store_of_manifest(path: str) -> str | None:
    """The store a version's manifest path is in (``<store>/objects/<ab>/<abcd...>``), or None.

    Example:
        >>> store_of_manifest("s3://bucket/datasets/objects/5f/5f0c22a9e1")
        's3://bucket/datasets'
    """
    parts = path.rstrip("/").rsplit("/", 3)
    if len(parts) != 4 or parts[1] != "objects" or not parts[3].startswith(parts[2]):
        return None
    return parts[0] or "/"


def _recorded_store(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The store the latest materialization of ``key`` records, if it records one."""
    records = instance.fetch_materializations(key, limit=1).records
    materialization = records[0].asset_materialization if records else None
    if materialization is None:
        return None
    entry = materialization.metadata.get(DatasetMetadataKey.PATH.value)
    path = entry.value if entry is not None else None
    return store_of_manifest(path) if isinstance(path, str) else None
