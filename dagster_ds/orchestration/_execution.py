"""What a dataset asset does in a run: fingerprint, skip or run, describe, push."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import dagster as dg

from dagster_ds.arrow import Dataset, LineageStep
from dagster_ds.cache import cache_root
from dagster_ds.errors import DatasetAssetDefinitionError, DatasetAssetOutputError
from dagster_ds.fingerprint import HashNode
from dagster_ds.orchestration._streams import relabel_stream
from dagster_ds.orchestration.dask import on_dask
from dagster_ds.orchestration.io_manager import DatasetStore, StoredDataset
from dagster_ds.orchestration.metadata import (
    RUN_SPECIFIC_KEYS,
    DatasetMetadataKey,
    DatasetTranslator,
)
from dagster_ds.orchestration.resource import HubResource, HubTarget
from dagster_ds.orchestration.versioning import asset_recipe
from dagster_ds.streaming import IterableDataset

Key = DatasetMetadataKey


@dataclass(frozen=True)
class DatasetAssetSpec:
    """Everything `dataset_asset` learned about a function at definition time."""

    function: Callable[..., Any]
    parameters: tuple[str, ...]
    takes_context: bool
    config_type: type | None
    code_version: str | None
    io_manager_key: str
    hub_resource_key: str
    push_to_hub: HubTarget | None
    translator: DatasetTranslator


@dataclass(frozen=True)
class _Outcome:
    """What the step produced: the output value, its description, how, and the Hub push."""

    value: Any
    described: Mapping[str, Any]
    cache: str
    hub: Mapping[str, Any]


def execute(
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    inputs: Mapping[str, Any],
    config: Any,
) -> Iterator[dg.Output[Any]]:
    """Run one dataset asset: skip its function when its recipe is already stored.

    The recipe fingerprint (transform hash, the parents' data versions, the
    config) decides the skip; the data version recorded is the stored rows'
    content fingerprint, so a re-run that yields the same rows changes
    nothing downstream.
    """
    started = time.perf_counter()
    name = context.asset_key.to_user_string()
    parents = {param: _require_dataset(name, param, inputs[param]).fingerprint for param in inputs}
    config_values = config.model_dump() if config is not None else None
    fingerprint, tree = asset_recipe(spec.code_version, parents, config_values)
    store = _store(context, spec.io_manager_key)
    if (
        spec.code_version is not None
        and store is not None
        and store.contains(context.asset_key, fingerprint)
    ):
        outcome = _reuse(spec, context, store, fingerprint, parents)
    else:
        outcome = _run(spec, context, store, dict(inputs), config, (fingerprint, tree), parents)
    stored = outcome.value if isinstance(outcome.value, StoredDataset) else None
    data_version = stored.content_fingerprint if stored is not None else fingerprint
    metadata: dict[str, Any] = {
        Key.FINGERPRINT.value: fingerprint,
        Key.CONTENT_FINGERPRINT.value: data_version,
        Key.CACHE.value: outcome.cache,
        Key.PARENT_FINGERPRINTS.value: dg.MetadataValue.json(parents),
        Key.TRANSFORM_HASH.value: spec.code_version or "unhashable",
        **outcome.described,
        **outcome.hub,
        Key.DURATION.value: dg.MetadataValue.float(time.perf_counter() - started),
    }
    yield _output(outcome.value, data_version, metadata)


def _reuse(
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    store: DatasetStore,
    fingerprint: str,
    parents: Mapping[str, str],
) -> _Outcome:
    """The stored dataset stands: describe it as before, without running or loading it."""
    key = context.asset_key
    earlier = _earlier_metadata(context.instance, key, fingerprint)
    described = (
        {k: v for k, v in earlier.items() if k not in RUN_SPECIFIC_KEYS} if earlier else None
    )
    hub = _pushed_before(spec, context, earlier) if spec.push_to_hub is not None else {}
    if described is None or (spec.push_to_hub is not None and not hub):
        dataset = store.load(key, fingerprint)
        described = described or spec.translator.get_metadata(dataset)
        if spec.push_to_hub is not None and not hub:
            hub = _push(spec, context, dataset)
    context.log.info(
        f"Skipped {key.to_user_string()}: fingerprint {fingerprint} is unchanged (same transform"
        f" hash {spec.code_version} and parent fingerprints {dict(parents)}) and already stored"
        f" at {store.path_for(key, fingerprint)}, so the transform did not run and nothing was"
        " written."
    )
    return _Outcome(store.describe(key, fingerprint), described, "hit", hub)


def _run(
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    store: DatasetStore | None,
    call: dict[str, Any],
    config: Any,
    recipe: tuple[str, HashNode | None],
    parents: Mapping[str, str],
) -> _Outcome:
    """Run the function (its transforms caching into the store); store its result."""
    fingerprint, tree = recipe
    key = context.asset_key
    name = key.to_user_string()
    if spec.takes_context:
        call["context"] = context
    if spec.config_type is not None:
        call["config"] = config
    if store is not None:  # the inputs' tables in the store: results reference them
        call = {
            param: store.adopt(value) if isinstance(value, Dataset) and param in parents else value
            for param, value in call.items()
        }
    with (
        cache_root(store.root, store.storage_options) if store is not None else nullcontext(),
        on_dask(context, store) as shards,
    ):
        output = _require_output(name, result_of(spec, call))
    result = _relabel(output, fingerprint, parents, name)
    value: Any = result
    dataset: Dataset | IterableDataset = result
    if store is not None:
        value = store.save(key, result, hash_tree=tree)
        retained = store.retain(key, context.instance, current=fingerprint)
        if retained is not None and retained.removed_versions:
            context.log.info(
                f"Retention (keep_versions={store.keep_versions}): removed"
                f" {len(retained.removed_versions)} older version(s) of {name} and"
                f" {len(retained.removed_entries)} entries only they used."
            )
        if isinstance(result, IterableDataset):  # consumed: describe what was stored
            dataset = store.load(key, fingerprint)
    described = {**spec.translator.get_metadata(dataset), **shards.metadata()}
    hub = _push(spec, context, dataset) if spec.push_to_hub is not None else {}
    cache = "miss" if spec.code_version is not None else "disabled (unhashable transform)"
    context.log.info(f"Ran {name}: new fingerprint {fingerprint}.")
    return _Outcome(value, described, cache, hub)


def result_of(spec: DatasetAssetSpec, call: Mapping[str, Any]) -> Any:
    """Call the asset's function."""
    return spec.function(**call)


def _output(value: Any, fingerprint: str, metadata: Mapping[str, Any]) -> dg.Output[Any]:
    # Output(data_version=...) is a Dagster beta parameter; it is the documented way to
    # record our own data version, so its warning is not the user's concern.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.Output(value, data_version=dg.DataVersion(fingerprint), metadata=dict(metadata))


def _store(context: dg.AssetExecutionContext, io_manager_key: str) -> DatasetStore | None:
    """The run's DatasetStore, or None when the asset's IO manager is another one."""
    store = getattr(context.resources, io_manager_key, None)
    return store if isinstance(store, DatasetStore) else None


def _earlier_metadata(
    instance: dg.DagsterInstance, key: dg.AssetKey, fingerprint: str
) -> Mapping[str, Any] | None:
    """The metadata of the latest materialization, if it has this recipe fingerprint."""
    event = instance.get_latest_materialization_event(key)
    materialization = event.asset_materialization if event is not None else None
    if materialization is None:
        return None
    recorded = materialization.metadata.get(Key.FINGERPRINT.value)
    if recorded is None or recorded.value != fingerprint:
        return None
    return materialization.metadata


def _require_dataset(asset: str, parameter: str, value: Any) -> Dataset | IterableDataset:
    if is_dataset(value):
        return value
    raise DatasetAssetOutputError(
        f"Asset {asset!r}: parameter {parameter!r} received a {type(value).__name__}, not a"
        " dagster_ds dataset. A dataset_asset's parameters must name dataset assets or"
        " dataset sources (or be 'context' or 'config'); load other values inside the function."
    )


def _require_output(asset: str, result: Any) -> Dataset | IterableDataset:
    if is_dataset(result):
        return result
    hint = " (did the function forget to return?)" if result is None else ""
    raise DatasetAssetOutputError(
        f"Asset {asset!r} returned {_describe(result)}, not a dagster_ds Dataset{hint}."
        " A dataset_asset must return the dataset (or IterableDataset) it builds, e.g."
        " `return parent.map(fn)`."
    )


def is_dataset(value: Any) -> bool:
    """Whether ``value`` is a dagster_ds dataset, map-style or streaming."""
    return isinstance(value, Dataset | IterableDataset)


def _describe(value: Any) -> str:
    text = repr(value)
    return f"a {type(value).__name__} ({text[:60] + '…' if len(text) > 60 else text})"


def _relabel(
    dataset: Dataset | IterableDataset, fingerprint: str, parents: Mapping[str, str], asset: str
) -> Dataset | IterableDataset:
    """The same data under the asset's fingerprint, with the asset as a lineage step."""
    if isinstance(dataset, IterableDataset):
        return relabel_stream(dataset, fingerprint)
    step = LineageStep(f"dataset_asset:{asset}", fingerprint, tuple(parents.values()))
    return Dataset._from_shards(  # pyright: ignore[reportPrivateUsage]
        dataset,
        dataset._shards,  # pyright: ignore[reportPrivateUsage]
        fingerprint=fingerprint,
        mapping=dataset._mapping,  # pyright: ignore[reportPrivateUsage]
        mapping_entries=dataset._mapping_entries,  # pyright: ignore[reportPrivateUsage]
        step=step,
    )


def _hub(spec: DatasetAssetSpec, context: dg.AssetExecutionContext) -> HubResource:
    hub = getattr(context.resources, spec.hub_resource_key, None)
    if not isinstance(hub, HubResource):
        raise DatasetAssetDefinitionError(
            f"Asset {context.asset_key.to_user_string()!r} pushes to the Hub, but resource"
            f" {spec.hub_resource_key!r} is a {type(hub).__name__}, not a HubResource. Add"
            f" resources={{{spec.hub_resource_key!r}: HubResource(...)}} to your Definitions."
        )
    return hub


def _target(spec: DatasetAssetSpec, hub: HubResource) -> str:
    assert spec.push_to_hub is not None
    return f"{spec.push_to_hub.describe()} on {hub.identity}"


def _pushed_before(
    spec: DatasetAssetSpec, context: dg.AssetExecutionContext, earlier: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The earlier push of this very fingerprint to the same target, if recorded (no request)."""
    hub = _hub(spec, context)
    if earlier is None or hub.check_hub_when_unchanged:
        return {}
    target = earlier.get(Key.HUB_TARGET.value)
    if target is None or target.value != _target(spec, hub):
        return {}
    if Key.HUB_COMMIT.value not in earlier or Key.HUB_URL.value not in earlier:
        return {}
    return {
        Key.HUB_PUSH.value: "skipped (unchanged)",
        Key.HUB_TARGET.value: target,
        Key.HUB_URL.value: earlier[Key.HUB_URL.value],
        Key.HUB_COMMIT.value: earlier[Key.HUB_COMMIT.value],
    }


def _push(
    spec: DatasetAssetSpec, context: dg.AssetExecutionContext, dataset: Dataset | IterableDataset
) -> dict[str, Any]:
    """Push through the HubResource; the metadata that records where it went."""
    assert spec.push_to_hub is not None
    hub = _hub(spec, context)
    result = hub.push(dataset, spec.push_to_hub)
    status = "skipped (unchanged)" if result.skipped else "pushed"
    context.log.info(f"Hub: {status}, {result.commit_url}")
    return {
        Key.HUB_PUSH.value: status,
        Key.HUB_TARGET.value: _target(spec, hub),
        Key.HUB_URL.value: dg.MetadataValue.url(result.commit_url),
        Key.HUB_COMMIT.value: result.commit_oid,
    }
