"""Which assets a refresh must run: staleness by fingerprint, decided without launching a run.

An asset is stale when it was never materialized, when its code version (a
dataset asset's transform hash) differs from the one its latest
materialization recorded, or when a parent's data version differs from the
one it consumed; a parent that is itself stale makes it stale too. A dataset
source is observed here, in the evaluating process (its fingerprint comes from
its files' content, so unchanged files are read from the cache, not parsed),
so a refresh in which nothing changed decides "0 stale assets" and launches
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg

from dagster_ds.cache import cache_root
from dagster_ds.orchestration._partitions import latest_materialization
from dagster_ds.orchestration.io_manager import default_store_root
from dagster_ds.orchestration.metadata import DatasetMetadataKey

_CODE_VERSION_TAG = "dagster/code_version"
_DATA_VERSION_TAG = "dagster/data_version"
_INPUT_TAG = "dagster/input_data_version/"
_SHORT = 12


@dataclass(frozen=True)
class AssetRefresh:
    """Whether one asset needs a refresh, and why.

    Attributes:
        key: The asset.
        stale: Whether the refresh must run it (or observe it, for a source).
        reason: Why, in words.
        source: Whether it is a source (observed, never materialized).
    """

    key: dg.AssetKey
    stale: bool
    reason: str
    source: bool = False

    def __str__(self) -> str:
        return f"{self.key.to_user_string()}: {self.reason}"


@dataclass(frozen=True)
class RefreshPlan:
    """What a refresh of a selection must do, decided from the instance's records."""

    assets: tuple[AssetRefresh, ...]

    @property
    def stale(self) -> list[AssetRefresh]:
        """The assets to run (and the sources to observe)."""
        return [asset for asset in self.assets if asset.stale]

    def run_request(self, **kwargs: Any) -> dg.RunRequest | dg.SkipReason:
        """A run of the stale assets only, or a skip saying that nothing is stale, and why."""
        stale = self.stale
        materialized = [asset for asset in stale if not asset.source]
        if not materialized:
            return dg.SkipReason(self.describe())
        return dg.RunRequest(asset_selection=[asset.key for asset in stale], **kwargs)

    def describe(self) -> str:
        """``N stale assets of M`` and one line per asset."""
        count = len([asset for asset in self.stale if not asset.source])
        total = len([asset for asset in self.assets if not asset.source])
        noun = "asset" if count == 1 else "assets"
        lines = [f"{count} stale {noun} of {total}: {'nothing to do' if not count else 'run'}"]
        return "\n".join(lines + [f"  {asset}" for asset in self.assets])


def refresh_plan(
    repository: dg.RepositoryDefinition,
    instance: dg.DagsterInstance,
    selection: dg.AssetSelection,
) -> RefreshPlan:
    """Decide which assets of ``selection`` (and sources upstream of it) are stale."""
    definitions = {id(a): a for a in repository.assets_defs_by_key.values()}
    sources = dict(repository.source_assets_by_key)
    every: list[dg.AssetsDefinition | dg.SourceAsset] = [*definitions.values(), *sources.values()]
    selected = selection.resolve(every)
    by_key = repository.assets_defs_by_key
    order = _topological(selected, by_key, sources)
    wanted = {key for key in order if key not in sources}
    wanted |= {parent for key in wanted for parent in _parents(by_key, key)} - set(sources)
    latest = _Latest(instance, wanted)
    versions: dict[dg.AssetKey, str | None] = {}
    stale: set[dg.AssetKey] = set()
    found: list[AssetRefresh] = []
    for key in order:
        if key in sources:
            refresh, version = _source(instance, sources[key])
        else:
            refresh = _asset(latest, by_key[key], key, versions, stale)
            version = None if refresh.stale else latest.data_version(key)
        versions[key] = version
        if refresh.stale:
            stale.add(key)
        found.append(refresh)
    return RefreshPlan(tuple(found))


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


def _source(
    instance: dg.DagsterInstance, source: dg.SourceAsset
) -> tuple[AssetRefresh, str | None]:
    recorded = _latest_observation(instance, source.key)
    current = _observe(instance, source)
    if current is None:  # not observable here: as last observed
        reason = f"as last observed ({_short(recorded)})"
        return AssetRefresh(source.key, False, reason, source=True), recorded
    if recorded is None:
        return AssetRefresh(source.key, True, "never observed", source=True), current
    if current != recorded:
        reason = f"new data version ({_short(recorded)} → {_short(current)})"
        return AssetRefresh(source.key, True, reason, source=True), current
    reason = f"unchanged (data version {_short(current)})"
    return AssetRefresh(source.key, False, reason, source=True), current


def _observe(instance: dg.DagsterInstance, source: dg.SourceAsset) -> str | None:
    """An unpartitioned dataset source's data version now (its fingerprint), or None.

    Loaded into the instance's store: unchanged files are hashed, not parsed again.
    """
    spec = getattr(getattr(source, "observe_fn", None), "dagster_ds_spec", None)
    if spec is None:
        return None
    with cache_root(default_store_root(instance)):
        return spec.load().fingerprint


def _asset(
    latest: _Latest,
    definition: dg.AssetsDefinition,
    key: dg.AssetKey,
    versions: Mapping[dg.AssetKey, str | None],
    stale: set[dg.AssetKey],
) -> AssetRefresh:
    if definition.partitions_def is not None:
        return AssetRefresh(key, True, "partitioned: each run checks its partitions' fingerprints")
    materialization = latest.materialization(key)
    if materialization is None:
        return AssetRefresh(key, True, "never materialized")
    tags = materialization.tags or {}
    code_version = definition.code_versions_by_key.get(key)
    recorded_code = tags.get(_CODE_VERSION_TAG)
    if code_version is None:
        return AssetRefresh(key, True, "no code version (an unhashable function): always runs")
    if recorded_code != code_version:
        reason = f"code version changed ({_short(recorded_code)} → {_short(code_version)})"
        return AssetRefresh(key, True, reason)
    reasons: list[str] = []
    for parent in _parents({key: definition}, key):
        name = parent.to_user_string()
        if parent in stale:
            reasons.append(f"parent '{name}' is refreshed first")
            continue
        current = versions[parent] if parent in versions else latest.data_version(parent)
        consumed = tags.get(_INPUT_TAG + name)
        if current is not None and current != consumed:
            reasons.append(f"parent '{name}' has a new data version")
    if reasons:
        return AssetRefresh(key, True, "; ".join(reasons))
    fingerprint = materialization.metadata.get(DatasetMetadataKey.FINGERPRINT.value)
    shown = f" (fingerprint {_short(str(fingerprint.value))})" if fingerprint is not None else ""
    return AssetRefresh(key, False, f"nothing changed{shown}")


class _Latest:
    """The latest materializations of the assets a plan reads, fetched in one query."""

    def __init__(self, instance: dg.DagsterInstance, keys: Iterable[dg.AssetKey]) -> None:
        self._instance = instance
        events = instance.get_latest_materialization_events(list(keys)) if keys else {}
        self._found = {
            key: event.asset_materialization if event is not None else None
            for key, event in events.items()
        }

    def materialization(self, key: dg.AssetKey) -> dg.AssetMaterialization | None:
        if key not in self._found:
            self._found[key] = latest_materialization(self._instance, key)
        return self._found[key]

    def data_version(self, key: dg.AssetKey) -> str | None:
        materialization = self.materialization(key)
        if materialization is None:
            return _latest_observation(self._instance, key)
        return (materialization.tags or {}).get(_DATA_VERSION_TAG)


def _latest_observation(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    records = instance.fetch_observations(key, limit=1).records
    if not records or records[0].asset_observation is None:
        return None
    return records[0].asset_observation.data_version


def _short(value: str | None) -> str:
    return "none" if value is None else f"{value[:_SHORT]}…"
