"""publish_to_hub: one asset that pushes several split assets to the Hub in ONE commit.

A refresh that updates ``train`` and ``test`` must not publish a new train
next to an old test. Pushing each split from its own asset makes one commit
per split, and a reader between the two sees a mix. The publishing asset
depends on the split assets and pushes them together as a `DatasetDict`: one
commit, titled and described with the assets, their fingerprints and the
Dagster run id. When the fingerprints are the ones its latest materialization
already pushed to the same Hub, it makes no request at all; otherwise the Hub's
card decides (a split already there keeps its files; all there: no commit).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from dagster_ds.errors import DatasetAssetDefinitionError
from dagster_ds.fingerprint import Hasher
from dagster_ds.orchestration.metadata import DatasetMetadataKey
from dagster_ds.orchestration.resource import (
    HubResource,
    HubTarget,
    PushedAsset,
    hub_commit_message,
)

__all__ = ["publish_to_hub"]

Key = DatasetMetadataKey
AssetRef = dg.AssetsDefinition | dg.AssetKey | str
_SPLIT = re.compile(r"^\w+(\.\w+)*$")
_FORMAT = "publish_to_hub/1"  # part of the code version: bump when what is pushed changes


def publish_to_hub(
    name: str,
    target: HubTarget | str,
    splits: Mapping[str, AssetRef],
    *,
    key_prefix: str | Sequence[str] | None = None,
    group_name: str | None = None,
    description: str | None = None,
    tags: Mapping[str, str] | None = None,
    owners: Sequence[str] | None = None,
    automation_condition: dg.AutomationCondition | None = None,
    freshness_policy: dg.FreshnessPolicy | None = None,
    hub_resource_key: str = "hub",
) -> dg.AssetsDefinition:
    """An asset that publishes split assets to one Hub dataset config in a single commit.

    Args:
        name: The asset's name.
        target: The repository (a repo id or a `HubTarget`; its ``split`` is
            ignored: the config's splits become exactly ``splits``).
        splits: Split name to the dataset asset (or key) that is that split.
        key_prefix: Prefix of the asset key.
        group_name: The asset group.
        description: Shown in the UI; default: which splits go where.
        tags: Asset tags.
        owners: Owners of the asset.
        automation_condition: For example `fingerprint_changed`.
        freshness_policy: How fresh the published dataset must be.
        hub_resource_key: The resource key of the `HubResource`.

    Raises:
        DatasetAssetDefinitionError: No splits, or a split name the Hub refuses.

    Example:
        >>> published = publish_to_hub("docs_hub", "me/docs", {"train": "train", "test": "test"})
        >>> sorted(key.to_user_string() for key in published.dependency_keys)
        ['test', 'train']
    """
    hub_target = HubTarget.coerce(target)
    if not splits:
        raise DatasetAssetDefinitionError(f"publish_to_hub {name!r}: give at least one split.")
    bad = [split for split in splits if not _SPLIT.match(split)]
    if bad:
        raise DatasetAssetDefinitionError(
            f"publish_to_hub {name!r}: split names {bad} must be letters, digits and '_',"
            " dot-separated (the Hub's rule); rename them."
        )
    parameters = {f"split_{index}": split for index, split in enumerate(splits)}
    keys = {split: _key(ref) for split, ref in splits.items()}
    ins = {param: dg.AssetIn(key=keys[split]) for param, split in parameters.items()}
    code_version = Hasher.hash([_FORMAT, hub_target.describe(), sorted(parameters.values())])

    def publish(context: dg.AssetExecutionContext, **inputs: Any) -> dg.MaterializeResult:
        datasets = {parameters[param]: dataset for param, dataset in inputs.items()}
        fingerprints = {split: datasets[split].fingerprint for split in splits}
        hub = _hub(context, hub_resource_key)
        where = f"{hub_target.repo_id}:{hub_target.config_name}@{hub_target.revision or 'main'}"
        recorded = _recorded_push(context, hub, where, fingerprints)
        pushed = {split: keys[split].to_user_string() for split in splits}
        summary = ", ".join(f"{split} ({fingerprints[split]})" for split in splits)
        if recorded is not None:
            context.log.info(
                f"Hub: {where} already has {summary}, as the last publication recorded:"
                " no request, no commit."
            )
            metadata = {**recorded, Key.HUB_PUSH.value: "skipped (unchanged)"}
        else:
            metadata = _push(context, hub, hub_target, where, datasets, pushed)
        metadata[Key.HUB_SPLITS.value] = dg.MetadataValue.json(
            {
                split: {
                    "asset": pushed[split],
                    "fingerprint": fingerprints[split],
                    "rows": datasets[split].num_rows,
                }
                for split in splits
            }
        )
        with warnings.catch_warnings():  # data_version= is a beta parameter of Dagster's
            warnings.simplefilter("ignore", dg.BetaWarning)
            return dg.MaterializeResult(
                data_version=dg.DataVersion(Hasher.hash(sorted(fingerprints.items()))),
                metadata=metadata,
            )

    publish.__name__ = name
    publish.__annotations__ = {"context": dg.AssetExecutionContext}  # Dagster reads it
    return dg.asset(
        name=name,
        key_prefix=key_prefix,
        ins=ins,
        group_name=group_name,
        description=description
        or f"Publishes {', '.join(f'{s} ({keys[s].to_user_string()})' for s in splits)}"
        f" to {hub_target.repo_id} ({hub_target.config_name}) in one commit.",
        metadata={
            "dagster_ds/hub_repo": hub_target.repo_id,
            "dagster_ds/code_version": code_version,
        },
        tags=tags,
        kinds={"huggingface"},
        owners=owners,
        automation_condition=automation_condition,
        freshness_policy=freshness_policy,
        required_resource_keys={hub_resource_key},
        code_version=code_version,
    )(publish)


def _key(ref: AssetRef) -> dg.AssetKey:
    if isinstance(ref, dg.AssetsDefinition):
        return ref.key
    return dg.AssetKey.from_coercible(ref)


def _hub(context: dg.AssetExecutionContext, key: str) -> HubResource:
    hub = getattr(context.resources, key, None)
    if not isinstance(hub, HubResource):
        raise DatasetAssetDefinitionError(
            f"Asset {context.asset_key.to_user_string()!r} publishes to the Hub, but resource"
            f" {key!r} is a {type(hub).__name__}, not a HubResource. Add"
            f" resources={{{key!r}: HubResource(...)}} to your Definitions."
        )
    return hub


def _recorded_push(
    context: dg.AssetExecutionContext,
    hub: HubResource,
    where: str,
    fingerprints: Mapping[str, str],
) -> dict[str, Any] | None:
    """The latest materialization's push entries if it pushed these very fingerprints there."""
    if hub.check_hub_when_unchanged:
        return None
    metadata, splits = _last_publication(context, f"{where} on {hub.identity}")
    recorded = {split: entry.get("fingerprint") for split, entry in splits.items()}
    if not splits or recorded != dict(fingerprints):
        return None
    keys = (Key.HUB_TARGET.value, Key.HUB_URL.value, Key.HUB_COMMIT.value)
    if any(key not in metadata for key in keys):
        return None
    return {key: metadata[key] for key in keys}


def _last_publication(
    context: dg.AssetExecutionContext, target: str
) -> tuple[Mapping[str, Any], dict[str, dict[str, Any]]]:
    """The last publication to ``target``: its metadata and each split's recorded entry.

    Each split's entry has its asset, fingerprint and row count. Nothing when the
    latest materialization published elsewhere (or nothing).
    """
    event = context.instance.get_latest_materialization_event(context.asset_key)
    materialization = event.asset_materialization if event is not None else None
    metadata = materialization.metadata if materialization is not None else {}
    recorded_target = metadata.get(Key.HUB_TARGET.value)
    splits: Any = getattr(metadata.get(Key.HUB_SPLITS.value), "value", None)
    if recorded_target is None or recorded_target.value != target or not isinstance(splits, dict):
        return {}, {}
    return metadata, {str(k): v for k, v in splits.items() if isinstance(v, dict)}


def _push(
    context: dg.AssetExecutionContext,
    hub: HubResource,
    target: HubTarget,
    where: str,
    datasets: Mapping[str, Any],
    assets: Mapping[str, str],
) -> dict[str, Any]:
    from dagster_ds.arrow import DatasetDict

    _, earlier = _last_publication(context, f"{where} on {hub.identity}")
    title, description = hub_commit_message(
        context.run.run_id,
        [
            PushedAsset(
                assets[split],
                split,
                dataset.fingerprint,
                rows=dataset.num_rows,
                previous_fingerprint=earlier.get(split, {}).get("fingerprint"),
                previous_rows=earlier.get(split, {}).get("rows"),
            )
            for split, dataset in datasets.items()
        ],
    )
    result = hub.push_splits(
        DatasetDict(dict(datasets)), target, commit_message=title, commit_description=description
    )
    if result.skipped:
        context.log.info(f"Hub: {where} already has every split: no commit ({result.commit_url}).")
    else:
        unchanged = f"; unchanged: {', '.join(result.unchanged)}" if result.unchanged else ""
        context.log.info(f"Hub: published {title!r} in one commit{unchanged}: {result.commit_url}")
    return {
        Key.HUB_PUSH.value: "skipped (unchanged)" if result.skipped else "pushed",
        Key.HUB_TARGET.value: f"{where} on {hub.identity}",
        Key.HUB_URL.value: dg.MetadataValue.url(result.commit_url),
        Key.HUB_COMMIT.value: result.commit_oid,
    }
