"""What a refresh would do, decided without doing it: ``dagster-ds plan`` and the refresh ticks.

The decision is the refresh's own (`refresh_plan`: which assets and partitions
are stale, from the instance's records). For each stale dataset asset whose
parents keep their versions, the recipe the step would compute is computed
here too, from the same inputs as the step (code version, parents' data
versions, default config, hashed resources and inputs, partition). Stored: the
step records it without running (``skip``, in the words ``dagster_ds/changed``
uses for a cache hit). Not stored: it runs, and why is said by
`describe_changes`, as the step will say it. Each run gets an estimate from
the durations and bytes the earlier materializations recorded.

A plan writes nothing: no run, no event, and no byte of the store. Stored
versions are read through their manifests only (a lookup writes no usage
record), and sources are fingerprinted from their listing, with a snapshot of
the store's records of local files' digests, so that a file hashed now is
remembered in the snapshot, not in the store.

A dataset source whose files changed has no stored version to say which of its
columns changed: the plan reads its changed files (only those) and hashes their
columns as loading will (`source_columns`), so that its readers' steps say it
in the run's words, with what they will reuse by their read columns. The
source's step says what that read.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sqlite3
import statistics
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import dagster as dg

from dagster_ds.arrow import VERSION_KIND, version_record
from dagster_ds.cache import CacheStore, cache_root, format_size
from dagster_ds.orchestration._changes import (
    NOTHING_CHANGED,
    ParentVersion,
    carried_parent_records,
    describe_changes,
    recipe_tree,
    recorded_parents,
)
from dagster_ds.orchestration._column_plan import planned_column_reuse
from dagster_ds.orchestration._hidden import affects_output, hidden_inputs
from dagster_ds.orchestration._partitions import latest_materialization, latest_materializations
from dagster_ds.orchestration._refresh import AssetRefresh, Observe, RefreshPlan, refresh_plan
from dagster_ds.orchestration._source_columns import SourceColumns, source_columns
from dagster_ds.orchestration._source_partitions import for_partition
from dagster_ds.orchestration._source_versions import source_fingerprint, source_version_key
from dagster_ds.orchestration.io_manager import DatasetStore
from dagster_ds.orchestration.metadata import DatasetMetadataKey, recorded_value
from dagster_ds.orchestration.versioning import asset_recipe

__all__ = ["AssetStep", "Estimate", "Plan", "plan_refresh"]

PLAN_TAG = "dagster_ds/plan"
_DATA_VERSION_TAG = "dagster/data_version"
_HISTORY = 100  # earlier materializations an estimate is made from, at most
_SHORT = 12
_REFRESHED_FIRST = "0" * 32  # the version of a parent that runs first (not known yet)


@dataclass(frozen=True)
class Estimate:
    """What a step is expected to cost, from earlier materializations that ran it.

    Attributes:
        seconds: The median recorded duration of earlier runs (None: none recorded).
        bytes: The median bytes those runs wrote (None: none recorded).
        runs: How many earlier runs it is made from.
    """

    seconds: float | None
    bytes: int | None
    runs: int

    def __str__(self) -> str:
        if not self.runs:
            return "no earlier run to estimate from"
        parts = [f"~{self.seconds:.1f} s" if self.seconds is not None else None]
        parts.append(f"~{format_size(self.bytes)}" if self.bytes is not None else None)
        shown = ", ".join(part for part in parts if part)
        return f"{shown} (from {self.runs} earlier run{'s' if self.runs != 1 else ''})"


@dataclass(frozen=True)
class AssetStep:
    """What a refresh does with one asset (one partition of it).

    Attributes:
        asset: The asset key, as users write it (``a/b``).
        partition: The partition (None: not partitioned).
        action: ``run`` (the function runs), ``skip`` (it does not), or, for a
            source, ``changed`` or ``unchanged``.
        why: Why, one sentence each (the words of ``dagster_ds/changed``).
        source: Whether the asset is a source (observed, never run).
        recipe: The recipe the step would compute, when known before its parents run.
        estimate: For a run, its expected cost.
        shards_before: For a run, the shards of the version it replaces (those
            whose inputs did not change are reused from the store).
    """

    asset: str
    partition: str | None
    action: str
    why: tuple[str, ...]
    source: bool = False
    recipe: str | None = None
    estimate: Estimate | None = None
    shards_before: int | None = None

    def __str__(self) -> str:
        where = f" [{self.partition}]" if self.partition is not None else ""
        if self.source:
            return f"{self.asset}{where} (source): {'; '.join(self.why)}"
        text = f"{self.asset}{where}: {self.action}: {'; '.join(self.why)}"
        if self.shards_before is not None:
            shards = f"{self.shards_before} shard{'s' if self.shards_before != 1 else ''}"
            text += f"; {shards} before, those with unchanged inputs reused"
        return text + (f"; {self.estimate}" if self.estimate is not None else "")

    def to_json(self) -> dict[str, Any]:
        """The step as JSON-ready values."""
        estimate = self.estimate
        return {
            "asset": self.asset,
            "partition": self.partition,
            "action": self.action,
            "why": list(self.why),
            "source": self.source,
            "recipe": self.recipe,
            "shards_before": self.shards_before,
            "estimate": None
            if estimate is None
            else {"seconds": estimate.seconds, "bytes": estimate.bytes, "runs": estimate.runs},
        }


@dataclass(frozen=True)
class Plan:
    """What a refresh of a selection would do, asset by asset (partition by partition).

    Attributes:
        steps: One per asset (partition), parents first; sources included.
        refresh: The refresh's own decision (which runs a tick requests).
        store: The store the recipes were looked up in (None: none found).
    """

    steps: tuple[AssetStep, ...]
    refresh: RefreshPlan = field(repr=False)
    store: str | None = None

    @property
    def runs(self) -> list[AssetStep]:
        """The steps whose function runs."""
        return [step for step in self.steps if step.action == "run"]

    def estimate(self) -> Estimate:
        """The cost of every run: the sum of their estimates (what is known of it)."""
        known = [step.estimate for step in self.runs if step.estimate and step.estimate.runs]
        seconds = [e.seconds for e in known if e.seconds is not None]
        written = [e.bytes for e in known if e.bytes is not None]
        return Estimate(
            sum(seconds) if seconds else None,
            sum(written) if written else None,
            min((e.runs for e in known), default=0),
        )

    def summary(self) -> str:
        """One line: how many steps run and are skipped, and the estimate."""
        assets = [step for step in self.steps if not step.source]
        runs = len(self.runs)
        text = f"plan: {runs} to run, {len(assets) - runs} to skip of {len(assets)}"
        changed = [step for step in self.steps if step.source and step.action == "changed"]
        if changed:
            text += f"; {len(changed)} source{'s' if len(changed) != 1 else ''} changed"
        if runs:
            estimate = self.estimate()
            unknown = len([s for s in self.runs if not (s.estimate and s.estimate.runs)])
            cost = [f"~{estimate.seconds:.1f} s" if estimate.seconds is not None else None]
            cost.append(f"~{format_size(estimate.bytes)}" if estimate.bytes is not None else None)
            shown = ", ".join(part for part in cost if part) or "unknown cost"
            text += f"; estimate {shown}"
            if unknown:
                text += f" ({unknown} run{'s' if unknown != 1 else ''} never ran before)"
        return text

    def describe(self) -> str:
        """The summary, then one line per asset (partition)."""
        return "\n".join([self.summary(), *(f"  {step}" for step in self.steps)])

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON-ready values (what ``dagster-ds plan --json`` prints)."""
        estimate = self.estimate()
        return {
            "summary": self.summary(),
            "store": self.store,
            "estimate": {"seconds": estimate.seconds, "bytes": estimate.bytes},
            "assets": _by_asset(self.steps),
            "steps": [step.to_json() for step in self.steps],
        }

    def run_requests(self, run_key: str, **kwargs: Any) -> list[dg.RunRequest] | dg.SkipReason:
        """The refresh's run requests, tagged with the plan's summary; or a skip saying why."""
        tags = {**dict(kwargs.pop("tags", None) or {}), PLAN_TAG: self.summary()}
        found = self.refresh.run_requests(run_key, tags=tags, **kwargs)
        if isinstance(found, dg.SkipReason):  # the refresh's headline, then the plan
            headline = self.refresh.describe().splitlines()[0]
            return dg.SkipReason(f"{headline}\n{self.describe()}")
        return found


def plan_refresh(
    repository: dg.RepositoryDefinition,
    instance: dg.DagsterInstance,
    selection: dg.AssetSelection,
    *,
    store: DatasetStore | None = None,
    now: datetime.datetime | None = None,
    lookback: int = 1,
    observe: Observe | None = None,
    read_sources: bool = True,
) -> Plan:
    """What a refresh of ``selection`` would do, and why, without doing any of it.

    Args:
        repository: The code location's definitions.
        instance: The Dagster instance (read only).
        selection: The assets to plan; the sources upstream of them are observed.
        store: Where recipes are looked up (default: each asset's `DatasetIOManager`).
        now: The time of the refresh (the time windows considered).
        lookback: How many of the latest time windows of time-partitioned assets count.
        observe: How a source's data version is found (default: from its files'
            listing, writing nothing).
        read_sources: Read the changed files of dataset sources to name the columns
            that changed (False: say only that their data version changed, as a
            refresh tick does: its run reads them).

    Returns:
        The plan: one step per asset (partition), parents first.

    Example:
        >>> import dagster as dg
        >>> plan = plan_refresh(
        ...     dg.Definitions().get_repository_def(),
        ...     dg.DagsterInstance.ephemeral(),
        ...     dg.AssetSelection.all(),
        ... )
        >>> plan.summary()
        'plan: 0 to run, 0 to skip of 0'
    """
    with _snapshot_state(store if observe is None else None) as scratch:
        refresh = refresh_plan(
            repository,
            instance,
            selection,
            now=now,
            lookback=lookback,
            observe=observe or _listing_observer(scratch),
        )
        planner = _StepPlanner(
            repository, instance, refresh, store, scratch if read_sources else None
        )
        steps = planner.read_sources(tuple(planner.step(unit) for unit in refresh.assets))
    return Plan(steps, refresh, store.root if store is not None else None)


class _StepPlanner:
    """Turns the refresh's decision on each unit into a step, parents first."""

    def __init__(
        self,
        repository: dg.RepositoryDefinition,
        instance: dg.DagsterInstance,
        refresh: RefreshPlan,
        store: DatasetStore | None,
        scratch: str | None,
    ) -> None:
        self.repository = repository
        self.instance = instance
        self.store = store
        self.scratch = scratch  # the default store while sources' files are hashed (None: not)
        self._sources: dict[tuple[dg.AssetKey, str | None, str], SourceColumns | None] = {}
        self.units = {(unit.key, unit.partition): unit for unit in refresh.assets}
        self._history: dict[dg.AssetKey, list[dg.AssetMaterialization]] = {}
        self._stores: dict[str, DatasetStore | None] = {}
        self._latest_by_asset: dict[
            dg.AssetKey, dict[str | None, dg.AssetMaterialization | None]
        ] = {}

    def step(self, unit: AssetRefresh) -> AssetStep:
        name = unit.key.to_user_string()
        if unit.source:
            action = "changed" if unit.stale else "unchanged"
            return AssetStep(name, unit.partition, action, (unit.reason,), source=True)
        definition = self.repository.assets_defs_by_key[unit.key]
        spec = _spec(definition)
        store = self._store(spec)
        earlier = self._latest(unit.key, unit.partition)
        if not unit.stale:
            return AssetStep(name, unit.partition, "skip", (self._unchanged(unit, store, earlier),))
        recipe = self._recipe(unit, definition, spec) if store is not None else None
        if recipe is None or store is None:
            return self._run(unit, (unit.reason,), None, earlier)
        fingerprint, tree, pending, reuse = recipe
        parents = self._parent_versions(definition, spec, unit.partition, store, pending)
        why = describe_changes(store, unit.key, fingerprint, tree, earlier, parents)
        if pending:  # what else changed, in the run's words; those parents' versions come later
            said = tuple(f"parent '{parameter}'" for parameter in pending)
            why = [line for line in why if not line.startswith(said)]
            why += [f"parent '{parameter}' is refreshed first" for parameter in pending]
            return self._run(unit, tuple(why), None, earlier)
        if version_record(store.cache, store.version_key(unit.key, fingerprint)) is not None:
            return AssetStep(name, unit.partition, "skip", (NOTHING_CHANGED,), recipe=fingerprint)
        if reuse:
            why += self._column_reuse(store, unit.key, earlier, parents)
        return self._run(unit, tuple(why), fingerprint, earlier)

    def _parent_versions(
        self,
        definition: dg.AssetsDefinition,
        spec: Any,
        partition: str | None,
        store: DatasetStore,
        pending: Sequence[str],
    ) -> dict[str, ParentVersion]:
        """The stored versions the step would read, by parameter (as the run names them).

        Only the parents stored in ``store`` whose version is known now (not refreshed
        first), each from its manifest: no lease, no usage record, no data file. A
        dataset source's, when not stored yet, is forecast from its changed files.
        """
        found: dict[str, ParentVersion] = {}
        for parameter in spec.parameters:
            parent = definition.keys_by_input_name.get(parameter)
            if parent is None or parameter in pending or parameter in spec.ignore_args:
                continue
            parent_partition = partition if self._partitions_def(parent) is not None else None
            if parent not in self.repository.assets_defs_by_key:
                source = self._source_version(parent, parent_partition, store)
                if source is not None:
                    found[parameter] = source
                continue
            materialization = self._latest(parent, parent_partition)
            recipe = (
                recorded_value(materialization.metadata, DatasetMetadataKey.RECIPE)
                if materialization is not None
                else None
            )
            if not isinstance(recipe, str):
                continue
            entry = store.cache.described_entry(store.version_key(parent, recipe))
            if entry is not None and entry.metadata_item("kind") == VERSION_KIND:
                found[parameter] = entry
        return found

    def _source_version(
        self, key: dg.AssetKey, partition: str | None, store: DatasetStore
    ) -> ParentVersion | None:
        """The source version (of ``partition``) the run will load: stored, or forecast.

        Only a `dataset_source` of plain data files; a forecast reads the files
        whose loads ``store`` does not hold, once per source, partition and store.
        """
        unit = self.units.get((key, partition))
        source = self.repository.source_assets_by_key.get(key)
        spec = getattr(getattr(source, "observe_fn", None), "dagster_ds_spec", None)
        if unit is None or spec is None or unit.observed is None:
            return None
        partitions_def = self._partitions_def(key)
        if partitions_def is not None and partition is not None:
            spec = for_partition(spec, partitions_def, partition)
        version = source_version_key(spec, unit.observed)
        stored = store.cache.described_entry(version)
        if stored is not None:
            return stored
        memo = (key, partition, store.root)
        if self.scratch is None:
            return None
        if memo not in self._sources:
            with cache_root(self.scratch):
                self._sources[memo] = source_columns(store.cache, spec)
        found = self._sources[memo]
        if found is None or found.key != version:
            return None
        return _Forecast(found.key, found.metadata)

    def read_sources(self, steps: tuple[AssetStep, ...]) -> tuple[AssetStep, ...]:
        """``steps``, each source's saying what the plan read of its changed files."""
        read: dict[str, tuple[int, int]] = {}
        for (key, _, _), found in self._sources.items():
            if found is not None and found.files_read:
                name = key.to_user_string()
                before = read.get(name, (0, 0))
                read[name] = (before[0] + found.files_read, before[1] + found.bytes_read)
        return tuple(
            replace(step, why=(*step.why, _read_words(*read[step.asset])))
            if step.source and step.asset in read
            else step
            for step in steps
        )

    def _column_reuse(
        self,
        store: DatasetStore,
        key: dg.AssetKey,
        earlier: dg.AssetMaterialization | None,
        parents: Mapping[str, ParentVersion],
    ) -> list[str]:
        """What the run will reuse by read columns (see `planned_column_reuse`)."""
        recipe = recorded_value(earlier.metadata, DatasetMetadataKey.RECIPE) if earlier else None
        if not isinstance(recipe, str) or not parents:
            return []
        previous = version_record(store.cache, store.version_key(key, recipe))
        if previous is None:
            return []
        new = {parameter: entry.key for parameter, entry in parents.items()}
        known = {
            **carried_parent_records(previous),
            **{entry.key: entry.metadata for entry in parents.values()},
        }
        return planned_column_reuse(store.cache, previous, recorded_parents(previous), new, known)

    def _unchanged(
        self,
        unit: AssetRefresh,
        store: DatasetStore | None,
        earlier: dg.AssetMaterialization | None,
    ) -> str:
        """Why a step the refresh does not run is skipped."""
        recipe = recorded_value(earlier.metadata, DatasetMetadataKey.RECIPE) if earlier else None
        if store is None or not isinstance(recipe, str) or not unit.reason.startswith("nothing"):
            return unit.reason
        if version_record(store.cache, store.version_key(unit.key, recipe)) is None:
            return (
                f"nothing changed, but its version (recipe {recipe[:_SHORT]}…) is no longer"
                " stored: a refresh does not run it; materialize it to store it again"
            )
        return NOTHING_CHANGED

    def _run(
        self,
        unit: AssetRefresh,
        why: tuple[str, ...],
        fingerprint: str | None,
        earlier: dg.AssetMaterialization | None,
    ) -> AssetStep:
        return AssetStep(
            unit.key.to_user_string(),
            unit.partition,
            "run",
            why,
            recipe=fingerprint,
            estimate=self._estimate(unit.key, unit.partition),
            shards_before=self._shards_before(unit.key, earlier),
        )

    def _store(self, spec: Any) -> DatasetStore | None:
        """The store of the asset's IO manager, when it is a `DatasetIOManager`."""
        if self.store is not None or spec is None:
            return self.store
        key = spec.io_manager_key
        if key not in self._stores:
            built = self._build([key])
            store = built.get(key) if built is not None else None
            self._stores[key] = store if isinstance(store, DatasetStore) else None
        return self._stores[key]

    def _build(self, keys: Sequence[str]) -> dict[str, Any] | None:
        """The code location's resources ``keys``, initialized (None: they cannot be here)."""
        defined = self.repository.get_top_level_resources()
        wanted = {key: defined[key] for key in keys if key in defined}
        try:
            with dg.build_resources(wanted, instance=self.instance) as built:
                return {key: getattr(built, key) for key in wanted}
        except Exception:  # a user's resource that needs its run: what it changes waits for it
            return None

    def _recipe(
        self, unit: AssetRefresh, definition: dg.AssetsDefinition, spec: Any
    ) -> tuple[str, Any, list[str], bool] | None:
        """The recipe the step would compute, its tree, the parents run first, and column reuse.

        The last: whether its outputs may be reused by their read columns (no
        hidden input declared, as the run decides). A parent that runs first
        counts with a placeholder version: the recipe is then not the step's, but
        the tree still says what else changed. None: the recipe cannot be known
        before the run.
        """
        if spec is None or spec.code_version is None:
            return None
        parents: dict[str, str] = {}
        pending: list[str] = []
        for parameter in spec.parameters:
            if parameter in spec.ignore_args:
                continue
            version = self._parent_version(definition, parameter, unit.partition)
            if version is None:
                return None
            if version == _REFRESHED_FIRST:
                pending.append(parameter)
            parents[parameter] = version
        config = _default_config(spec)
        if config is None and spec.config_type is not None:
            return None
        resources = self._resources(spec)
        if resources is None:
            return None
        hidden = hidden_inputs(resources, spec.fingerprint_inputs)
        fingerprint, _ = asset_recipe(
            spec.code_version, parents, config, hidden.digests, partition_key=unit.partition
        )
        tree = recipe_tree(
            fingerprint,
            spec.function,
            spec.config_type,
            parents,
            config,
            hidden.trees,
            spec.version_salt,
            unit.partition,
        )
        return fingerprint, tree, pending, not any(hidden.digests.values())

    def _parent_version(
        self, definition: dg.AssetsDefinition, parameter: str, partition: str | None
    ) -> str | None:
        """The data version the step would read for ``parameter``.

        `_REFRESHED_FIRST` when the plan runs that parent first; None when not known here.
        """
        parent = definition.keys_by_input_name.get(parameter)
        if parent is None:
            return None
        parent_def = self._partitions_def(parent)
        if parent_def is None:
            unit: tuple[dg.AssetKey, str | None] = (parent, None)
        elif partition is not None and parent_def == definition.partitions_def:
            unit = (parent, partition)
        else:  # several partitions read as one dataset: known once loaded
            return None
        planned = self.units.get(unit)
        if planned is not None and planned.source:
            return planned.observed
        if planned is not None and planned.stale:
            return _REFRESHED_FIRST  # its new version is known when it has run
        materialization = self._latest(parent, unit[1])
        if materialization is None:
            return None
        return (materialization.tags or {}).get(_DATA_VERSION_TAG)

    def _latest(self, key: dg.AssetKey, partition: str | None) -> dg.AssetMaterialization | None:
        """The latest materialization of ``key`` (``partition``): one query per asset."""
        if key not in self._latest_by_asset:
            partitions = [p for (k, p) in self.units if k == key and p is not None]
            found: dict[str | None, dg.AssetMaterialization | None] = {}
            if partitions:
                found.update(latest_materializations(self.instance, key, partitions))
            self._latest_by_asset[key] = found
        found = self._latest_by_asset[key]
        if partition not in found:
            found[partition] = latest_materialization(self.instance, key, partition)
        return found[partition]

    def _partitions_def(self, key: dg.AssetKey) -> dg.PartitionsDefinition | None:
        if key in self.repository.source_assets_by_key:
            return self.repository.source_assets_by_key[key].partitions_def
        return self.repository.assets_defs_by_key[key].partitions_def

    def _resources(self, spec: Any) -> dict[str, Any] | None:
        """The resources whose configuration enters the recipe (None: cannot be built here)."""
        if not spec.resource_keys:
            return {}
        built = self._build(sorted(spec.resource_keys))
        if built is None:
            return None
        return {key: value for key, value in built.items() if affects_output(value)}

    def _estimate(self, key: dg.AssetKey, partition: str | None) -> Estimate:
        """The median duration and bytes of earlier runs (of this partition, else any)."""
        runs = [m for m in self._materializations(key) if _ran(m)]
        own = [m for m in runs if m.partition == partition]
        chosen = own or runs
        seconds = [v for m in chosen if (v := _number(m, DatasetMetadataKey.DURATION)) is not None]
        written = [
            v
            for m in chosen
            if (v := _number(m, DatasetMetadataKey.SIZE, DatasetMetadataKey.BYTES_WRITTEN))
            is not None
        ]
        return Estimate(
            statistics.median(seconds) if seconds else None,
            int(statistics.median(written)) if written else None,
            len(chosen),
        )

    def _materializations(self, key: dg.AssetKey) -> list[dg.AssetMaterialization]:
        if key not in self._history:
            records = self.instance.fetch_materializations(key, limit=_HISTORY).records
            self._history[key] = [
                record.asset_materialization
                for record in records
                if record.asset_materialization is not None
            ]
        return self._history[key]

    def _shards_before(
        self, key: dg.AssetKey, earlier: dg.AssetMaterialization | None
    ) -> int | None:
        """How many shards the version a run replaces has (None: none stored)."""
        recipe = recorded_value(earlier.metadata, DatasetMetadataKey.RECIPE) if earlier else None
        store = self.store or self._store(_spec(self.repository.assets_defs_by_key[key]))
        if store is None or not isinstance(recipe, str):
            return None
        record = version_record(store.cache, store.version_key(key, recipe))
        shards = record.get("shards") if record is not None else None
        return len(shards) if isinstance(shards, list) else None


@dataclass(frozen=True)
class _Forecast:
    """A source's version not stored yet: its key and the record comparing it needs."""

    key: str
    metadata: Mapping[str, Any]


def _read_words(files: int, size: int) -> str:
    """``read 1 changed file (98 B) to name its changed columns``."""
    plural = "s" if files != 1 else ""
    return f"read {files} changed file{plural} ({format_size(size)}) to name its changed columns"


def _spec(definition: dg.AssetsDefinition) -> Any:
    """The `dataset_asset` spec behind a definition (None: not a dataset asset)."""
    function = getattr(definition.op.compute_fn, "decorated_fn", None)
    return getattr(function, "dagster_ds_spec", None)


def _default_config(spec: Any) -> dict[str, Any] | None:
    """The config values a run launched without run config gives (None: it must give some)."""
    if spec.config_type is None:
        return None
    try:
        config = spec.config_type()
    except Exception:  # pydantic's validation error: a field has no default
        return None
    return {k: v for k, v in config.model_dump().items() if k not in spec.ignore_args}


def _ran(materialization: dg.AssetMaterialization) -> bool:
    """Whether this materialization ran the function (not a cache hit)."""
    return recorded_value(materialization.metadata, DatasetMetadataKey.CACHE) == "miss"


def _number(
    materialization: dg.AssetMaterialization, *keys: DatasetMetadataKey
) -> float | int | None:
    for key in keys:
        value = recorded_value(materialization.metadata, key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
    return None


def _by_asset(steps: Sequence[AssetStep]) -> list[dict[str, Any]]:
    """Per asset, its partitions by action: which run and which are skipped (reused).

    A source's are ``changed`` and ``unchanged``; an unpartitioned asset's partition is None.
    """
    found: dict[str, dict[str, Any]] = {}
    for step in steps:
        actions = ("changed", "unchanged") if step.source else ("run", "skip")
        entry = found.setdefault(
            step.asset,
            {"asset": step.asset, "source": step.source, **{action: [] for action in actions}},
        )
        entry[step.action].append(step.partition)
    return list(found.values())


def _listing_observer(scratch: str) -> Observe:
    """Fingerprint a source from its files' listing, remembering digests in ``scratch`` only."""

    def observe(spec: Any, instance: dg.DagsterInstance) -> str | None:
        del instance
        with cache_root(scratch), spec.naming_missing_files():
            return source_fingerprint(spec)

    return observe


@contextlib.contextmanager
def _snapshot_state(store: DatasetStore | None) -> Iterator[str]:
    """A scratch store whose ``state/`` is a snapshot of ``store``'s (read only, consistent).

    Without a store, the scratch store is empty: sources are hashed with no records.
    """
    with tempfile.TemporaryDirectory(prefix="dagster-ds-plan-") as scratch:
        state = CacheStore(scratch).state_dir
        os.makedirs(state, exist_ok=True)
        source = store.cache.state_dir if store is not None else None
        if source is not None and os.path.isdir(source):
            for name in sorted(os.listdir(source)):
                _copy_database(os.path.join(source, name), os.path.join(state, name))
        yield scratch


def _copy_database(source: str, target: str) -> None:
    """A consistent copy of an SQLite database, opened read only (nothing else is copied)."""
    if not source.endswith((".sqlite3", ".sqlite", ".db")) or not os.path.isfile(source):
        return
    try:
        uri = f"{Path(os.path.abspath(source)).as_uri()}?mode=ro"
        with (
            contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30)) as reading,
            contextlib.closing(sqlite3.connect(target)) as writing,
        ):
            reading.backup(writing)
    except sqlite3.Error:  # damaged, or locked too long: the plan hashes those files itself
        with contextlib.suppress(OSError):
            os.remove(target)
