"""Which assets (and partitions) a refresh must run: staleness by fingerprint, without a run.

An asset (one partition of it, for a partitioned asset) is stale when it was
never materialized, when its code version (a dataset asset's transform hash)
differs from the one its latest materialization recorded, or when a parent's
data version differs from the one it consumed; a parent that is itself stale
makes it stale too. A dataset source is observed here, in the evaluating
process (its fingerprint comes from its files' content, so unchanged files are
read from the cache, not parsed), so a refresh in which nothing changed
decides "0 stale assets" and launches nothing.

Partitioned assets are considered in their recent partitions: the last
``lookback`` time windows as of the tick, or every key of static and dynamic
partitions. A refresh requests one run per stale partition (with the assets
stale in it) and one for the stale unpartitioned assets; an asset whose stale
parent is refreshed in another of these runs waits for the next tick, so it
never reads its parent's old version.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from dagster_ds.arrow import shards_fingerprint
from dagster_ds.cache import cache_root
from dagster_ds.errors import DatasetSourceNotFoundError
from dagster_ds.orchestration._partitions import (
    latest_materialization,
    latest_materializations,
    latest_observations,
)
from dagster_ds.orchestration._source_partitions import for_partition
from dagster_ds.orchestration.io_manager import default_store_root
from dagster_ds.orchestration.metadata import DatasetMetadataKey, recorded_value

_CODE_VERSION_TAG = "dagster/code_version"
_DATA_VERSION_TAG = "dagster/data_version"
_INPUT_TAG = "dagster/input_data_version/"
_SHORT = 12

Unit = tuple[dg.AssetKey, str | None]  # an asset, and its partition (None: unpartitioned)
# How a dataset source's data version is found now: its spec -> its fingerprint (None: unknown).
Observe = Callable[[Any, dg.DagsterInstance], str | None]


@dataclass(frozen=True)
class AssetRefresh:
    """Whether one asset (or one partition of it) needs a refresh, and why.

    Attributes:
        key: The asset.
        stale: Whether the refresh must run it (or observe it, for a source).
        reason: Why, in words.
        source: Whether it is a source (observed, never materialized).
        partition: The partition (None: the asset is not partitioned).
        observed: For a source, the data version observed now (None: not observable here).
    """

    key: dg.AssetKey
    stale: bool
    reason: str
    source: bool = False
    partition: str | None = None
    observed: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        where = f" [{self.partition}]" if self.partition is not None else ""
        return f"{self.key.to_user_string()}{where}: {self.reason}"


@dataclass(frozen=True)
class RefreshPlan:
    """What a refresh of a selection must do, decided from the instance's records."""

    assets: tuple[AssetRefresh, ...]
    groups: Mapping[Unit, int] = field(default_factory=dict[Unit, int])

    @property
    def stale(self) -> list[AssetRefresh]:
        """The assets (partitions) to run, and the sources to observe."""
        return [asset for asset in self.assets if asset.stale]

    def run_requests(self, run_key: str, **kwargs: Any) -> list[dg.RunRequest] | dg.SkipReason:
        """One run per stale partition and one for the stale unpartitioned assets, or a skip.

        ``run_key`` prefixes each request's run key (a schedule needs one per request).
        """
        runs: dict[tuple[int, str | None], list[AssetRefresh]] = {}
        for asset in self.stale:
            group = self.groups.get((asset.key, asset.partition), -1)
            runs.setdefault((group, asset.partition), []).append(asset)
        requests = [
            dg.RunRequest(
                run_key=f"{run_key}:{partition or 'unpartitioned'}:{group}",
                asset_selection=list(dict.fromkeys(asset.key for asset in assets)),
                partition_key=partition,
                **kwargs,
            )
            for (group, partition), assets in runs.items()
            if any(not asset.source for asset in assets)
        ]
        return requests or dg.SkipReason(self.describe())

    def describe(self) -> str:
        """``N stale assets of M`` and one line per asset (partition)."""
        count = len([asset for asset in self.stale if not asset.source])
        total = len([asset for asset in self.assets if not asset.source])
        noun = "asset" if count == 1 else "assets"
        lines = [f"{count} stale {noun} of {total}: {'nothing to do' if not count else 'run'}"]
        return "\n".join(lines + [f"  {asset}" for asset in self.assets])

    def observations(self) -> list[dg.AssetObservation]:
        """An observation of each source (partition) whose data version changed."""
        return [
            dg.AssetObservation(
                asset.key,
                partition=asset.partition,
                tags={_DATA_VERSION_TAG: asset.observed},
                metadata={DatasetMetadataKey.DATA_VERSION.value: asset.observed},
            )
            for asset in self.assets
            if asset.source and asset.stale and asset.observed is not None
        ]


def refresh_plan(
    repository: dg.RepositoryDefinition,
    instance: dg.DagsterInstance,
    selection: dg.AssetSelection,
    *,
    now: datetime.datetime | None = None,
    lookback: int = 1,
    observe: Observe | None = None,
) -> RefreshPlan:
    """Decide which assets of ``selection`` (and sources upstream of it) are stale.

    ``now`` and ``lookback``: the time windows considered (the last ``lookback``
    partitions as of ``now``) of time-partitioned assets. ``observe``: how a
    dataset source's data version is found (default: load it into the
    instance's store, as a tick does).
    """
    definitions = {id(a): a for a in repository.assets_defs_by_key.values()}
    sources = dict(repository.source_assets_by_key)
    every: list[dg.AssetsDefinition | dg.SourceAsset] = [*definitions.values(), *sources.values()]
    by_key = repository.assets_defs_by_key
    order = _topological(selection.resolve(every), by_key, sources)
    planner = _Planner(instance, by_key, sources, now, lookback, observe or load_source_version)
    for key in order:
        planner.visit(key)
    return RefreshPlan(tuple(planner.found), planner.groups)


class _Planner:
    """Visits the assets parents first, recording each unit's version after the refresh."""

    def __init__(
        self,
        instance: dg.DagsterInstance,
        by_key: Mapping[dg.AssetKey, dg.AssetsDefinition],
        sources: Mapping[dg.AssetKey, dg.SourceAsset],
        now: datetime.datetime | None,
        lookback: int,
        observe: Observe,
    ) -> None:
        self.instance = instance
        self.observe = observe
        self.by_key = by_key
        self.sources = sources
        self.now = now
        self.lookback = lookback
        self.found: list[AssetRefresh] = []
        self.groups: dict[Unit, int] = {}
        self._versions: dict[Unit, str | None] = {}
        self._stale: set[Unit] = set()
        self._latest: dict[Unit, dg.AssetMaterialization | None] = {}  # read by `_asset`
        self._definitions: list[dg.PartitionsDefinition] = []

    def visit(self, key: dg.AssetKey) -> None:
        partitions_def = self._partitions_def(key)
        partitions: Sequence[str | None] = (
            [None] if partitions_def is None else self._scope(partitions_def)
        )
        if key in self.sources:
            refreshes = self._source(self.sources[key], partitions_def, partitions)
        else:
            refreshes = self._asset(key, partitions_def, partitions)
        group = self._group(partitions_def)
        for refresh in refreshes:
            unit = (key, refresh.partition)
            self.groups[unit] = group
            if refresh.stale:
                self._stale.add(unit)
                self._versions[unit] = refresh.observed if refresh.source else None
            else:
                self._versions[unit] = refresh.observed or self._recorded(unit)
            self.found.append(refresh)

    def _scope(self, partitions_def: dg.PartitionsDefinition) -> list[str | None]:
        keys = list(
            partitions_def.get_partition_keys(
                current_time=self.now, dynamic_partitions_store=self.instance
            )
        )
        if isinstance(partitions_def, dg.TimeWindowPartitionsDefinition):
            keys = keys[-self.lookback :] if self.lookback > 0 else []
        return list(keys)

    def _group(self, partitions_def: dg.PartitionsDefinition | None) -> int:
        """Which run a unit goes to: -1 unpartitioned, else its partitions definition."""
        if partitions_def is None:
            return -1
        for index, known in enumerate(self._definitions):
            if known == partitions_def:
                return index
        self._definitions.append(partitions_def)
        return len(self._definitions) - 1

    def _partitions_def(self, key: dg.AssetKey) -> dg.PartitionsDefinition | None:
        if key in self.sources:
            return self.sources[key].partitions_def
        return self.by_key[key].partitions_def

    def _source(
        self,
        source: dg.SourceAsset,
        partitions_def: dg.PartitionsDefinition | None,
        partitions: Sequence[str | None],
    ) -> list[AssetRefresh]:
        spec = getattr(getattr(source, "observe_fn", None), "dagster_ds_spec", None)
        recorded = self._observations(source.key, partitions)
        return [
            self._source_unit(source.key, spec, partitions_def, partition, recorded.get(partition))
            for partition in partitions
        ]

    def _source_unit(
        self,
        key: dg.AssetKey,
        spec: Any,
        partitions_def: dg.PartitionsDefinition | None,
        partition: str | None,
        before: str | None,
    ) -> AssetRefresh:
        def refresh(stale: bool, reason: str, observed: str | None) -> AssetRefresh:
            return AssetRefresh(key, stale, reason, True, partition, observed)

        if spec is None:  # not observable here: as last observed
            return refresh(False, f"as last observed ({_short(before)})", before)
        if partition is not None and partitions_def is not None:
            spec = for_partition(spec, partitions_def, partition)
        try:
            current = self.observe(spec, self.instance)
        except DatasetSourceNotFoundError:
            return refresh(False, "no files (yet)", None)
        if current is None:
            return refresh(False, f"as last observed ({_short(before)})", before)
        if before is None:
            return refresh(True, "never observed", current)
        if current != before:
            return refresh(
                True, f"new data version ({_short(before)} → {_short(current)})", current
            )
        return refresh(False, f"unchanged (data version {_short(current)})", current)

    def _asset(
        self,
        key: dg.AssetKey,
        partitions_def: dg.PartitionsDefinition | None,
        partitions: Sequence[str | None],
    ) -> list[AssetRefresh]:
        definition = self.by_key[key]
        found: dict[str | None, dg.AssetMaterialization | None] = {}
        if partitions_def is None:
            found[None] = latest_materialization(self.instance, key)
        else:
            keys = [p for p in partitions if p is not None]
            found.update(latest_materializations(self.instance, key, keys))
        self._latest.update({(key, partition): found.get(partition) for partition in partitions})
        return [
            self._unit(definition, key, partition, partitions_def, found.get(partition))
            for partition in partitions
        ]

    def _unit(
        self,
        definition: dg.AssetsDefinition,
        key: dg.AssetKey,
        partition: str | None,
        partitions_def: dg.PartitionsDefinition | None,
        materialization: dg.AssetMaterialization | None,
    ) -> AssetRefresh:
        def refresh(stale: bool, reason: str) -> AssetRefresh:
            return AssetRefresh(key, stale, reason, partition=partition)

        code_version = definition.code_versions_by_key.get(key)
        waits = [
            parent.to_user_string()
            for parent in _parents(self.by_key, key)
            if self._stale_elsewhere(parent, partition, partitions_def)
        ]
        if waits:
            names = ", ".join(f"'{name}'" for name in waits)
            return refresh(False, f"waits for parent {names}, refreshed in another run first")
        if materialization is None:
            return refresh(True, "never materialized")
        tags = materialization.tags or {}
        if code_version is None:
            return refresh(True, "no code version (an unhashable function): always runs")
        recorded_code = tags.get(_CODE_VERSION_TAG)
        if recorded_code != code_version:
            return refresh(
                True, f"code version changed ({_short(recorded_code)} → {_short(code_version)})"
            )
        reasons = [
            reason
            for parent in _parents(self.by_key, key)
            if (reason := self._parent_change(parent, partition, partitions_def, tags))
        ]
        if reasons:
            return refresh(True, "; ".join(reasons))
        recipe = recorded_value(materialization.metadata, DatasetMetadataKey.RECIPE)
        shown = f" (recipe {_short(str(recipe))})" if recipe is not None else ""
        return refresh(False, f"nothing changed{shown}")

    def _stale_elsewhere(
        self,
        parent: dg.AssetKey,
        partition: str | None,
        partitions_def: dg.PartitionsDefinition | None,
    ) -> bool:
        """Whether a stale unit of ``parent`` this unit reads runs in another run (so it waits).

        Sources never make it wait: the step reads their files, not their observation.
        """
        if parent in self.sources:
            return False
        own = (self._group(partitions_def), partition)
        reads = self._reads(parent, partition, partitions_def)
        return any(
            unit[0] == parent
            and (reads is None or unit in reads)
            and (self.groups.get(unit), unit[1]) != own
            for unit in self._stale
        )

    def _reads(
        self,
        parent: dg.AssetKey,
        partition: str | None,
        partitions_def: dg.PartitionsDefinition | None,
    ) -> list[Unit] | None:
        """The units of ``parent`` this unit reads (None: all of them, or not known here)."""
        parent_def = self._partitions_def(parent)
        if parent_def is None:
            return [(parent, None)]
        if partition is not None and parent_def == partitions_def:
            return [(parent, partition)]
        return None

    def _parent_change(
        self,
        parent: dg.AssetKey,
        partition: str | None,
        partitions_def: dg.PartitionsDefinition | None,
        tags: Mapping[str, str],
    ) -> str | None:
        """Why ``parent`` makes this unit stale, or None."""
        name = parent.to_user_string()
        parent_def = self._partitions_def(parent)
        if parent_def is None or (partition is not None and parent_def == partitions_def):
            unit = (parent, partition if parent_def is not None else None)
            if unit in self._stale:
                return f"parent '{name}' is refreshed first"
            current = self._versions[unit] if unit in self._versions else self._recorded(unit)
        elif partition is None:  # an unpartitioned reader of all its partitions
            current = self._all_partitions(parent, parent_def)
        else:
            return f"parent '{name}' is read through a partition mapping: runs, checks fingerprints"
        consumed = tags.get(_INPUT_TAG + name)
        if current is not None and current != consumed:
            return f"parent '{name}' has a new data version"
        return None

    def _all_partitions(
        self, parent: dg.AssetKey, parent_def: dg.PartitionsDefinition
    ) -> str | None:
        """The fingerprint of the dataset of all of ``parent``'s partitions (a shard each)."""
        keys = list(parent_def.get_partition_keys(dynamic_partitions_store=self.instance))
        versions: dict[str | None, str | None]
        if parent in self.sources:
            versions = self._observations(parent, keys)
        else:
            versions = {
                p: (m.tags or {}).get(_DATA_VERSION_TAG)
                for p, m in latest_materializations(self.instance, parent, keys).items()
            }
        versions.update(
            {p: self._versions[(parent, p)] for p in keys if (parent, p) in self._versions}
        )
        present = [versions[p] for p in keys if versions.get(p) is not None]
        return shards_fingerprint([str(v) for v in present]) if present else None

    def _recorded(self, unit: Unit) -> str | None:
        key, partition = unit
        if key in self.sources:
            return self._observations(key, [partition]).get(partition)
        if unit in self._latest:
            materialization = self._latest[unit]
        else:
            materialization = latest_materialization(self.instance, key, partition)
        if materialization is None:
            return None
        return (materialization.tags or {}).get(_DATA_VERSION_TAG)

    def _observations(
        self, key: dg.AssetKey, partitions: Sequence[str | None]
    ) -> dict[str | None, str | None]:
        if partitions == [None]:
            records = self.instance.fetch_observations(key, limit=1).records
            found = records[0].asset_observation if records else None
            return {None: found.data_version if found is not None else None}
        keys = [p for p in partitions if p is not None]
        return dict(latest_observations(self.instance, key, keys).items())


def load_source_version(spec: Any, instance: dg.DagsterInstance) -> str:
    """A source's data version, by loading it into the instance's store (a tick's way)."""
    with cache_root(default_store_root(instance)):
        return spec.load().fingerprint


def _topological(
    selected: Iterable[dg.AssetKey],
    by_key: Mapping[dg.AssetKey, dg.AssetsDefinition],
    sources: Mapping[dg.AssetKey, dg.SourceAsset],
) -> list[dg.AssetKey]:
    """The selected assets after their parents, with the sources upstream of them."""
    order: list[dg.AssetKey] = []
    seen: set[dg.AssetKey] = set()
    wanted = set(selected)

    def visit(key: dg.AssetKey) -> None:
        if key in seen:
            return
        seen.add(key)
        for parent in _parents(by_key, key):
            if parent in wanted or parent in sources:
                visit(parent)
        if key in wanted or key in sources:
            order.append(key)

    for key in sorted(wanted, key=lambda k: k.to_user_string()):
        visit(key)
    return order


def _parents(by_key: Mapping[dg.AssetKey, dg.AssetsDefinition], key: dg.AssetKey) -> list[Any]:
    definition = by_key.get(key)
    if definition is None:
        return []
    return [dep.asset_key for dep in definition.specs_by_key[key].deps]


def _short(value: str | None) -> str:
    return "none" if value is None else f"{value[:_SHORT]}…"
