"""Promote: ship versions computed in one deployment (DEV) to another (PROD) without recomputing.

For each asset, the version DEV's instance records as latest is stored in
PROD's store: entries PROD already holds are referenced, the others copied, and
the copy's content fingerprint (hashed from the bytes written to PROD) must
equal the data version DEV recorded, so a damaged or altered copy is refused.
Only then is the materialization recorded in PROD's instance, with DEV's data,
code and input versions: PROD's children see it fresh or stale exactly as if
PROD had computed it. A promote killed before that point leaves PROD's instance
on its old version (what was copied is unreferenced and gc takes it).

A version is promoted only when the code PROD deploys would compute it: the
asset's code version in PROD's definitions must be the one DEV's version was
made with.

The copies keep what DEV recorded of their columns (fingerprints, the columns
their function read, the parent versions they were computed from); a filter's
kept positions are copied under their own key with its records, and PROD
records the transforms whose outputs they are (`record_copied_outputs`): PROD's
next run over a parent whose labels alone changed says which column changed and
reuses the outputs that did not read it, as DEV would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from dagster_ds.arrow import Dataset, record_copied_outputs, version_record
from dagster_ds.cache import CacheEntry
from dagster_ds.errors import CacheEntryDamagedError, DatasetNotStoredError, OrchestrationError
from dagster_ds.fingerprint import HashNode
from dagster_ds.orchestration._changes import carried_parent_records, recorded_parents
from dagster_ds.orchestration._history import kept_metadata, kept_tags
from dagster_ds.orchestration._partitions import latest_materialization
from dagster_ds.orchestration.io_manager import DatasetStore, fingerprints_of
from dagster_ds.orchestration.metadata import DatasetMetadataKey

__all__ = ["PROMOTED_TAG", "Promotion", "plan_promotion", "promote"]

PROMOTED_TAG = "dagster_ds/promoted"
_CODE_VERSION_TAG = "dagster/code_version"


@dataclass(frozen=True)
class Promotion:
    """One asset's version to ship from DEV to PROD.

    Attributes:
        asset: The asset.
        recipe: The version's recipe fingerprint.
        data_version: Its content fingerprint (DEV's data version).
        code_version: The code version DEV's version was made with.
        version: DEV's materialization of it.
        already: Whether PROD's instance already records it as latest.
    """

    asset: dg.AssetKey
    recipe: str
    data_version: str
    code_version: str | None
    version: dg.AssetMaterialization
    already: bool


def plan_promotion(
    dev_instance: dg.DagsterInstance,
    dev: DatasetStore,
    prod_instance: dg.DagsterInstance,
    assets: Sequence[dg.AssetKey],
    deployed: Mapping[dg.AssetKey, str | None],
) -> list[Promotion]:
    """What promoting ``assets`` would ship; refuses before anything is written.

    Args:
        dev_instance: The instance whose latest materializations are promoted.
        dev: The store they are in.
        prod_instance: The instance that will record them.
        assets: The assets to promote.
        deployed: Each asset's code version in the code PROD deploys.

    Raises:
        OrchestrationError: An asset's code version differs from PROD's deployed
            code, or PROD does not define the asset.
        DatasetNotStoredError: DEV has no stored materialization of an asset.
    """
    promotions: list[Promotion] = []
    for key in assets:
        name = key.to_user_string()
        materialization = latest_materialization(dev_instance, key)
        found = fingerprints_of(materialization) if materialization is not None else None
        if materialization is None or found is None or not dev.contains(key, found[0]):
            raise DatasetNotStoredError(
                f"Asset {name!r} has no stored version to promote in {dev.root!r}: materialize"
                " it in the development deployment first."
            )
        recipe, content = found
        code_version = (materialization.tags or {}).get(_CODE_VERSION_TAG)
        if key not in deployed:
            raise OrchestrationError(
                f"Asset {name!r} is not defined in production's code: deploy the code that"
                " defines it before promoting it."
            )
        if deployed[key] != code_version:
            raise OrchestrationError(
                f"Asset {name!r} was computed in development with code version {code_version!r},"
                f" but production's deployed code has {deployed[key]!r}: production would not"
                " compute this version. Deploy the same code to production first (or"
                " materialize the asset there)."
            )
        latest = latest_materialization(prod_instance, key)
        prod_found = fingerprints_of(latest) if latest is not None else None
        data_version = content or recipe
        promotions.append(
            Promotion(
                key,
                recipe,
                data_version,
                code_version,
                materialization,
                prod_found is not None and prod_found[0] == recipe,
            )
        )
    return promotions


def promote(
    promotion: Promotion,
    dev: DatasetStore,
    prod: DatasetStore,
    prod_instance: dg.DagsterInstance,
) -> dg.AssetMaterialization | None:
    """Store the version in PROD (copying only what PROD lacks, verified), then record it.

    Returns:
        The materialization recorded in PROD's instance; None when it already
        records this version as latest.

    Raises:
        OrchestrationError: The copy's content fingerprint is not DEV's data
            version (damaged data in DEV); nothing is recorded.

    Example:
        >>> for step in plan_promotion(dev_home, dev, prod_home, keys, code):  # doctest: +SKIP
        ...     promote(step, dev, prod, prod_home)
    """
    if promotion.already:
        return None
    key = promotion.asset
    name = key.to_user_string()
    try:
        dataset = dev.load_as_stored(key, promotion.recipe)
        record = version_record(dev.cache, dev.version_key(key, promotion.recipe)) or {}
        tree = record.get("hash_tree")
        stored = prod.save(
            key,
            prod.adopt(dataset) if isinstance(dataset, Dataset) else dataset,
            hash_tree=HashNode.from_dict(tree) if isinstance(tree, dict) else None,
            partition=record.get("partition") if isinstance(record.get("partition"), str) else None,
            parents=_parent_entries(dev, record),
            parent_records=carried_parent_records(record),
        )
    except CacheEntryDamagedError as error:
        raise OrchestrationError(
            f"Promoting {name!r}: development's stored version {promotion.recipe} is damaged"
            f" ({error}); nothing was recorded in production. Materialize it again in"
            " development, then promote."
        ) from error
    if stored.content_fingerprint != promotion.data_version:
        raise OrchestrationError(
            f"Promoting {name!r}: the copy in {prod.root!r} hashes to {stored.content_fingerprint},"
            f" not to the data version development recorded ({promotion.data_version}); nothing"
            " was recorded in production. Verify the development store ('dagster-ds cache"
            " verify') and materialize the asset again there."
        )
    if isinstance(dataset, Dataset):  # production's next run of its transforms finds the copies
        record_copied_outputs(prod.cache, dataset)
    metadata: dict[str, Any] = {
        **kept_metadata(promotion.version.metadata),
        DatasetMetadataKey.PATH.value: dg.MetadataValue.path(prod.path_for(key, promotion.recipe)),
        "dagster_ds/changed": f"promoted from {dev.root} ({promotion.recipe})",
    }
    materialization = dg.AssetMaterialization(
        asset_key=key,
        description=f"Promoted from {dev.root}.",
        metadata=metadata,
        tags={
            **kept_tags(promotion.version.tags or {}, same_instance=False),
            PROMOTED_TAG: promotion.recipe,
        },
    )
    prod_instance.report_runless_asset_event(materialization)
    return materialization


def _parent_entries(dev: DatasetStore, record: Mapping[str, Any]) -> dict[str, str | CacheEntry]:
    """The parent versions ``record`` names: development's entries where it holds them.

    Production keeps what comparing those it does not hold needs (``parent_records``),
    so its next run names their changed columns even when they were not promoted.
    """
    return {
        parameter: dev.cache.described_entry(key) or key
        for parameter, key in recorded_parents(record).items()
    }
