"""What a dataset asset does in a run: fingerprint, skip or run, describe, push."""

from __future__ import annotations

import datetime
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import dagster as dg

from dagster_ds.arrow import (
    VERSION_KIND,
    Dataset,
    LineageStep,
    column_reuse_off,
    noting_column_reuse,
)
from dagster_ds.cache import CacheEntry
from dagster_ds.errors import (
    CacheEntryDamagedError,
    DatasetAssetDefinitionError,
    DatasetAssetOutputError,
    DatasetNotStoredError,
)
from dagster_ds.fingerprint import ASSET_STEP, HashNode
from dagster_ds.orchestration._audit import Audit, audit_candidate
from dagster_ds.orchestration._changes import (
    NOTHING_CHANGED,
    describe_changes,
    recipe_tree,
    stored_version,
)
from dagster_ds.orchestration._column_lineage import AssetColumns
from dagster_ds.orchestration._column_words import say_column_reuse
from dagster_ds.orchestration._diff_summary import with_diff_summary
from dagster_ds.orchestration._hidden import FingerprintInput, affects_output, hidden_inputs
from dagster_ds.orchestration._partitions import latest_materialization, partition_of
from dagster_ds.orchestration._provenance import input_tags
from dagster_ds.orchestration._streams import relabel_stream
from dagster_ds.orchestration.checks import DatasetCheck
from dagster_ds.orchestration.dask import on_dask
from dagster_ds.orchestration.io_manager import DatasetStore, StoredDataset
from dagster_ds.orchestration.metadata import (
    RUN_SPECIFIC_KEYS,
    DatasetMetadataKey,
    duration_metadata,
    recorded_value,
    version_metadata,
)
from dagster_ds.orchestration.resource import (
    HubResource,
    HubTarget,
    PushedAsset,
    hub_commit_message,
)
from dagster_ds.orchestration.translator import DatasetTranslator
from dagster_ds.orchestration.versioning import asset_recipe
from dagster_ds.streaming import IterableDataset

Key = DatasetMetadataKey
CHANGED_KEY = "dagster_ds/changed"


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
    version_salt: str | None = None
    fingerprint_inputs: tuple[FingerprintInput, ...] = ()
    ignore_args: frozenset[str] = frozenset()
    resource_keys: frozenset[str] = frozenset()
    checks: tuple[DatasetCheck, ...] = ()


@dataclass(frozen=True)
class _Outcome:
    """What the step produced: the output value, its description, how, and the Hub push."""

    value: Any
    described: Mapping[str, Any]
    cache: str
    hub: Mapping[str, Any]
    changed: list[str]
    audit: Audit = field(default_factory=Audit)


def execute(
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    inputs: Mapping[str, Any],
    config: Any,
) -> Iterator[dg.Output[Any] | dg.AssetCheckResult]:
    """Run one dataset asset: skip its function when its recipe is already stored.

    The recipe fingerprint (transform hash, the parents' data versions, the
    config, the required resources' configuration, the declared
    ``fingerprint_inputs``) decides the skip; the data version recorded is the
    stored rows' content fingerprint, so a re-run that yields the same rows
    changes nothing downstream. A run that is not skipped says why.
    """
    started = time.perf_counter()
    name = context.asset_key.to_user_string()
    ignored = spec.ignore_args
    datasets = {param: _require_dataset(name, param, inputs[param]) for param in inputs}
    parents = {param: data.fingerprint for param, data in datasets.items() if param not in ignored}
    config_values = (
        {k: v for k, v in config.model_dump().items() if k not in ignored}
        if config is not None
        else None
    )
    hidden = hidden_inputs(_hashed_resources(spec, context), spec.fingerprint_inputs)
    partition = partition_of(context)  # partitions: one version per partition (_partitions.py)
    fingerprint, _ = asset_recipe(
        spec.code_version, parents, config_values, hidden.digests, partition_key=partition
    )
    store = _store(context, spec.io_manager_key)
    try:
        # Declared hidden inputs are outside what the column reads prove: no reuse by them.
        with column_reuse_off(any(hidden.digests.values())), noting_column_reuse() as notes:
            outcome = _outcome(
                spec,
                context,
                store,
                inputs,
                config,
                fingerprint,
                (parents, config_values, hidden, partition),
            )
    except CacheEntryDamagedError as error:
        raise _damaged_input(store, name, datasets, error) from error
    stored = outcome.value if isinstance(outcome.value, StoredDataset) else None
    data_version = stored.content_fingerprint if stored is not None else fingerprint
    metadata: dict[str, Any] = {
        Key.RECIPE.value: fingerprint,
        Key.CACHE.value: outcome.cache,
        Key.PARENT_DATA_VERSIONS.value: dg.MetadataValue.json(parents),
        **version_metadata(spec.code_version, data_version),
        **outcome.described,
        **outcome.hub,
        CHANGED_KEY: dg.MetadataValue.text("; ".join(outcome.changed)),
        **duration_metadata(time.perf_counter() - started),
    }
    say_column_reuse(context, notes, metadata, CHANGED_KEY)
    # What the inputs really were (Dagster would tag the parents' latest versions).
    provenance = input_tags(
        {
            context.asset_key_for_input(param): (data, data.fingerprint)
            for param, data in datasets.items()
        }
    )
    yield _output(outcome.value, data_version, metadata, provenance)
    yield from outcome.audit.results


def _outcome(
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    store: DatasetStore | None,
    inputs: Mapping[str, Any],
    config: Any,
    fingerprint: str,
    recipe: tuple[dict[str, str], dict[str, Any] | None, Any, str | None],
) -> _Outcome:
    """Skip (the recipe is stored) or run the asset's function."""
    parents, config_values, hidden, partition = recipe
    versions = {
        param: key for param in parents if (key := stored_version(inputs[param])) is not None
    }
    began = datetime.datetime.now(datetime.UTC)
    earlier = latest_materialization(context.instance, context.asset_key, partition)
    previous = recorded_value(earlier.metadata, Key.RECIPE) if earlier is not None else None
    previous = previous if isinstance(previous, str) else None
    if (
        spec.code_version is not None
        and store is not None
        and store.contains(context.asset_key, fingerprint)
    ):
        outcome = _reuse(spec, context, store, fingerprint, earlier)
    else:
        tree = (
            recipe_tree(
                fingerprint,
                spec.function,
                spec.config_type,
                parents,
                config_values,
                hidden.trees,
                spec.version_salt,
                partition,
            )
            if spec.code_version is not None
            else None
        )
        changed = _why(spec, store, context.asset_key, fingerprint, tree, earlier, versions)
        outcome = _run(
            spec,
            context,
            store,
            dict(inputs),
            config,
            (fingerprint, tree, previous),
            changed,
            versions,
        )
    if store is None:
        return outcome
    summary = with_diff_summary(
        outcome.described, store, context.asset_key, (fingerprint, previous), began
    )
    return replace(outcome, described=summary)


def _damaged_input(
    store: DatasetStore | None,
    name: str,
    datasets: Mapping[str, Dataset | IterableDataset],
    error: CacheEntryDamagedError,
) -> DatasetNotStoredError:
    """The error of a step that found a stored input damaged; the inputs' versions are dropped.

    On object stores a version is not checked until its files are read, so the
    versions the step read are removed: the next run recomputes them (their
    intact entries are reused), instead of reading the same damage again.
    """
    dropped: list[str] = []
    versions = [
        entry
        for dataset in datasets.values()
        for entry in getattr(dataset, "_mapping_entries", ())[:1]  # a stored one's record
        if entry.metadata_item("kind") == VERSION_KIND
    ]
    for entry in versions if store is not None else []:
        assert store is not None
        if store.cache.holds(entry) and store.cache.remove(entry.key, force=True):
            dropped.append(entry.key)
    return DatasetNotStoredError(
        f"Asset {name!r}: a stored input was damaged or removed while it was read ({error})."
        f" The stored versions it read ({dropped!r}) were dropped: run again, and what they"
        " held is recomputed (what is intact is reused)."
    )


def _hashed_resources(spec: DatasetAssetSpec, context: dg.AssetExecutionContext) -> dict[str, Any]:
    """The resources whose configuration enters the fingerprint."""
    found: dict[str, Any] = {}
    for key in spec.resource_keys:
        resource = getattr(context.resources, key, None)
        if resource is not None and affects_output(resource):
            found[key] = resource
    return found


def _why(
    spec: DatasetAssetSpec,
    store: DatasetStore | None,
    key: dg.AssetKey,
    fingerprint: str,
    tree: HashNode | None,
    earlier: dg.AssetMaterialization | None,
    versions: Mapping[str, CacheEntry],
) -> list[str]:
    """Why the function runs, in words (``versions``: the parents' stored versions)."""
    if spec.code_version is None:
        return ["the function cannot be hashed, so it runs every time"]
    if store is None:
        return [f"not stored: the IO manager {spec.io_manager_key!r} is not a DatasetIOManager"]
    assert tree is not None
    return describe_changes(store, key, fingerprint, tree, earlier, versions)


def _reuse(
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    store: DatasetStore,
    fingerprint: str,
    materialization: dg.AssetMaterialization | None,
) -> _Outcome:
    """The stored dataset stands: describe it as before, without running or loading it."""
    key = context.asset_key
    earlier = _earlier_metadata(materialization, fingerprint)
    described = (
        {k: v for k, v in earlier.items() if k not in RUN_SPECIFIC_KEYS} if earlier else None
    )
    hub = _pushed_before(spec, context, earlier) if spec.push_to_hub is not None else {}
    stored = store.describe(key, fingerprint)
    audit = Audit()
    if described is None or (spec.push_to_hub is not None and not hub) or spec.checks:
        dataset = store.load(key, fingerprint)
        described = described or spec.translator.get_metadata(dataset)
        audit = _audit(spec, context, dataset)
        if spec.push_to_hub is not None and not hub:
            hub = _publish(spec, context, dataset, stored.content_fingerprint, audit)
    context.log.info(
        f"Skipped {key.to_user_string()}: nothing changed (recipe {fingerprint[:12]}…"
        " unchanged, already stored); the transform did not run and no data was stored"
        f"{_hub_note(hub, stored=True)}."
    )
    return _Outcome(stored, described, "hit", hub, [NOTHING_CHANGED], audit)


def _run(
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    store: DatasetStore | None,
    call: dict[str, Any],
    config: Any,
    recipe: tuple[str, HashNode | None, str | None],
    changed: list[str],
    versions: Mapping[str, CacheEntry],
) -> _Outcome:
    """Run the function (its transforms caching into the store); store its result.

    ``recipe``: the fingerprint, its hash tree, and the fingerprint materialized
    before (its version's content fingerprints are reused for shards it shares).
    ``versions``: the parents' stored versions, whose keys are recorded with the result.
    """
    fingerprint, tree, previous = recipe
    key = context.asset_key
    name = key.to_user_string()
    if spec.takes_context:
        call["context"] = context
    if spec.config_type is not None:
        call["config"] = config
    parents = {param: value.fingerprint for param, value in call.items() if is_dataset(value)}
    if store is not None:  # the inputs' tables in the store: results reference them
        call = {
            param: store.adopt(value) if isinstance(value, Dataset) and param in parents else value
            for param, value in call.items()
        }
    began = datetime.datetime.now(datetime.UTC)
    with (
        store.cache.as_default() if store is not None else nullcontext(),
        on_dask(context, store) as shards,
    ):
        output = _require_output(name, result_of(spec, call))
    upstream = {context.asset_key_for_input(param): call[param] for param in parents}
    columns = AssetColumns(output, upstream)
    result = columns.record(_relabel(output, fingerprint, parents, name))
    value: Any = result
    dataset: Dataset | IterableDataset = result
    if store is not None:
        partition = partition_of(context)
        value = store.save(
            key,
            result,
            hash_tree=tree,
            partition=partition,
            computed_since=began,
            previous=previous,
            parents=dict(versions),
        )
        retained = store.retain(key, context.instance, current=fingerprint, partition=partition)
        if retained is not None and retained.removed_versions:
            context.log.info(
                f"Retention (keep_versions={store.keep_versions}): removed"
                f" {len(retained.removed_versions)} older version(s) of {name} and"
                f" {len(retained.removed_entries)} entries only they used."
            )
        if isinstance(result, IterableDataset):  # consumed: describe what was stored
            dataset = store.load(key, fingerprint)
    described = {
        **spec.translator.get_metadata(dataset),
        **shards.metadata(),
        **columns.metadata(dataset.column_names),
    }
    data_version = value.content_fingerprint if isinstance(value, StoredDataset) else fingerprint
    audit = _audit(spec, context, dataset)
    hub = (
        _publish(spec, context, dataset, data_version, audit)
        if spec.push_to_hub is not None
        else {}
    )
    cache = "miss" if spec.code_version is not None else "disabled (unhashable transform)"
    context.log.info(f"Ran {name} because {'; '.join(changed)}{_hub_note(hub)}.")
    return _Outcome(value, described, cache, hub, changed, audit)


def _audit(
    spec: DatasetAssetSpec, context: dg.AssetExecutionContext, candidate: Dataset | IterableDataset
) -> Audit:
    """The asset's checks on the candidate (none declared and none pushing: nothing to do)."""
    if not spec.checks and spec.push_to_hub is None:
        return Audit()
    return audit_candidate(spec.checks, context, candidate)


def _publish(
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    dataset: Dataset | IterableDataset,
    data_version: str,
    audit: Audit,
) -> dict[str, Any]:
    """Push the audited candidate, or say in the log and metadata why it was withheld."""
    if audit.may_publish:
        return _push(spec, context, dataset, data_version)
    context.log.warning(
        f"Hub push of {context.asset_key.to_user_string()} withheld: {audit.reason(data_version)}."
    )
    return audit.withheld(data_version)


def _hub_note(hub: Mapping[str, Any], *, stored: bool = False) -> str:
    """The Hub's part of an asset's one log line (``stored``: the push sent a stored version)."""
    status = hub.get(Key.HUB_PUSH.value)
    if status is None:
        return ""
    url = hub.get(Key.HUB_URL.value)
    link = getattr(url, "value", url)
    if str(status).startswith("withheld"):
        return f"; Hub: push {status}"
    if status != "pushed":
        return f"; Hub: already there, no commit ({status})"
    which = "its stored version (not on the Hub yet)" if stored else "it"
    return f"; Hub: pushed {which} in one commit: {link}"


def result_of(spec: DatasetAssetSpec, call: Mapping[str, Any]) -> Any:
    """Call the asset's function."""
    return spec.function(**call)


def _output(
    value: Any, fingerprint: str, metadata: Mapping[str, Any], tags: Mapping[str, str]
) -> dg.Output[Any]:
    # Output(data_version=...) is a Dagster beta parameter; it is the documented way to
    # record our own data version, so its warning is not the user's concern.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.Output(
            value, data_version=dg.DataVersion(fingerprint), metadata=dict(metadata), tags=tags
        )


def _store(context: dg.AssetExecutionContext, io_manager_key: str) -> DatasetStore | None:
    """The run's DatasetStore, or None when the asset's IO manager is another one."""
    store = getattr(context.resources, io_manager_key, None)
    return store if isinstance(store, DatasetStore) else None


def _earlier_metadata(
    materialization: dg.AssetMaterialization | None, fingerprint: str
) -> Mapping[str, Any] | None:
    """The metadata of the latest materialization, if it has this recipe fingerprint."""
    if materialization is None:
        return None
    if recorded_value(materialization.metadata, Key.RECIPE) != fingerprint:
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
    step = LineageStep(f"{ASSET_STEP}{asset}", fingerprint, tuple(parents.values()))
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


def _num_rows(dataset: Dataset | IterableDataset) -> int | None:
    return dataset.num_rows if isinstance(dataset, Dataset) else None


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
    spec: DatasetAssetSpec,
    context: dg.AssetExecutionContext,
    dataset: Dataset | IterableDataset,
    data_version: str,
) -> dict[str, Any]:
    """Push through the HubResource; the metadata that records where it went."""
    assert spec.push_to_hub is not None
    hub = _hub(spec, context)
    name = context.asset_key.to_user_string()
    split = spec.push_to_hub.split or dataset.split or "train"
    pushed = PushedAsset(name, split, data_version, rows=_num_rows(dataset))
    earlier = latest_materialization(context.instance, context.asset_key, partition_of(context))
    recorded = earlier.metadata if earlier is not None else {}
    target = recorded.get(Key.HUB_TARGET.value)
    if target is not None and target.value == _target(spec, hub):  # what this push replaces
        rows = recorded_value(recorded, Key.ROW_COUNT)
        pushed = replace(
            pushed,
            previous_fingerprint=recorded_value(recorded, Key.DATA_VERSION),
            previous_rows=rows if isinstance(rows, int) else None,
        )
    title, description = hub_commit_message(context.run.run_id, [pushed])
    result = hub.push(
        dataset, spec.push_to_hub, commit_message=title, commit_description=description
    )
    status = "skipped (unchanged)" if result.skipped else "pushed"
    return {
        Key.HUB_PUSH.value: status,
        Key.HUB_TARGET.value: _target(spec, hub),
        Key.HUB_URL.value: dg.MetadataValue.url(result.commit_url),
        Key.HUB_COMMIT.value: result.commit_oid,
    }
