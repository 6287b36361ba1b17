"""DatasetIOManager: every dataset asset version a small manifest in the one dataset store.

The store is a `CacheStore` (a local folder or any fsspec URL; by default the
dataset cache itself). An asset version is a manifest entry in it, keyed by
the asset and its recipe fingerprint, that references the entries of the
dataset's shards: what the asset's transforms computed is stored by reference
(0 bytes copied), anything else is written once, through the cache's writer.
So every guarantee of the cache holds for assets:

- checksums are verified on load (first use in a process): a damaged version
  gives a `CacheCorruptionWarning`, is quarantined and counts as not stored, so
  the asset is recomputed, never served wrong;
- one writer per fingerprint (locks); reader leases keep gc away from versions
  in use; publication is atomic, so a killed step leaves no partial version.

An input is the upstream version produced in the same run when there is one,
otherwise the latest, never one another concurrent run produced.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
from pydantic import Field

from dagster_ds.arrow import (
    VERSION_KIND,
    Dataset,
    Retention,
    StoredVersion,
    adopt,
    all_versions,
    comparable_record,
    dataset_of_parts,
    derived_key,
    describe_version,
    open_version,
    retain,
    store_version,
    version_intact,
    version_record,
)
from dagster_ds.cache import CacheEntry, CacheStore, default_cache_root
from dagster_ds.errors import (
    DatasetAssetDefinitionError,
    DatasetAssetOutputError,
    DatasetNotStoredError,
)
from dagster_ds.fingerprint import HashNode
from dagster_ds.orchestration._partitions import (
    allows_missing,
    input_materializations,
    latest_materialization,
    latest_materializations,
    newest_record_id,
    records_in_run,
)
from dagster_ds.orchestration._provenance import remember
from dagster_ds.orchestration._streams import STREAM_FLAG, as_stream, stream_to_dataset
from dagster_ds.orchestration.metadata import DatasetMetadataKey, recorded_value, size_metadata
from dagster_ds.streaming import IterableDataset

__all__ = ["DatasetIOManager", "DatasetStore"]

_DATA_VERSION_TAG = "dagster/data_version"
#: The version record item naming the store key of each parent's version, by parameter.
PARENT_VERSIONS = "parent_versions"
#: The version record item holding, by key, what comparing parent versions of other stores
#: needs of their records (`comparable_record`).
PARENT_RECORDS = "parent_records"


@dataclass(frozen=True)
class StoredDataset:
    """What a dataset asset outputs once its dataset is in the store (or already was).

    Attributes:
        fingerprint: The recipe fingerprint (the version's key).
        content_fingerprint: The stored rows' fingerprint (the data version).
        size: Bytes the version references.
        bytes_written: Bytes this materialization wrote.
    """

    fingerprint: str
    content_fingerprint: str
    size: int
    bytes_written: int = 0


class DatasetIOManager(dg.ConfigurableIOManagerFactory):
    """Stores each dataset asset version by fingerprint, in the dataset store.

    Attributes:
        base_dir: The store: a local folder or any fsspec URL
            (``s3://bucket/datasets``). Default: ``dagster_ds`` in the Dagster
            instance's storage folder. While an asset's function runs, its
            transforms cache into this store (and dataset sources load into it),
            so an asset version references their results instead of copying them.
        storage_options: fsspec options for ``base_dir`` (``endpoint_url``,
            ``key``, ``secret``...; use ``dg.EnvVar`` for secrets).
        keep_versions: After each materialization, keep this many versions of
            the asset (newest first) and the one its latest materialization
            records; older ones go, with the shard entries only they used.
            Versions a running step reads are never removed. Default: keep all.
        read_from: Stores read beneath ``base_dir`` and never written, in order
            (production's store under a development deployment's): an asset
            whose recipe one of them holds is skipped at zero copy, only changed
            assets compute, into ``base_dir``. Nothing is ever written to them
            (no data, lock, usage record or quarantine move); a damaged entry
            there is reported and computed again into ``base_dir``.
        read_from_storage_options: fsspec options for the ``read_from`` stores.

    Example:
        >>> import dagster as dg
        >>> defs = dg.Definitions(
        ...     assets=[],
        ...     resources={"io_manager": DatasetIOManager(base_dir="s3://bucket/datasets")},
        ... )
    """

    base_dir: str | None = Field(
        default=None,
        description="Local folder or fsspec URL of the store; default: in the instance's storage.",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for base_dir (credentials, endpoint)."
    )

    keep_versions: int | None = Field(
        default=None,
        ge=1,
        description="Versions of each asset to keep (and what they use); default: all.",
    )
    read_from: list[str] = Field(
        default_factory=list,
        description="Stores read beneath base_dir and never written (e.g. production's).",
    )
    read_from_storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for the read_from stores."
    )

    def create_io_manager(self, context: dg.InitResourceContext) -> DatasetStore:
        """The IO manager of one run (or step process)."""
        return DatasetStore(
            self.base_dir or default_store_root(context.instance),
            self.storage_options,
            keep_versions=self.keep_versions,
            read_from=self.read_from,
            read_from_options=self.read_from_storage_options,
        )


class DatasetStore(dg.IOManager):
    """The IO manager `DatasetIOManager` creates: stores, finds and loads asset versions.

    Use it outside Dagster to open what a pipeline stored: the fingerprint is
    the asset's ``dagster_ds/fingerprint`` metadata.

    Example:
        >>> import tempfile
        >>> store = DatasetStore(tempfile.mkdtemp())
        >>> numbers = Dataset.from_dict({"n": [1, 2]})
        >>> store.save(dg.AssetKey("numbers"), numbers).bytes_written > 0
        True
        >>> store.load(dg.AssetKey("numbers"), numbers.fingerprint)["n"][:]
        [1, 2]
    """

    def __init__(
        self,
        base_dir: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        *,
        keep_versions: int | None = None,
        read_from: Sequence[str] = (),
        read_from_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._options = dict(storage_options or {})
        self.cache = CacheStore(
            base_dir or default_cache_root(),
            storage_options=self._options,
            read_from=read_from,
            read_from_options=read_from_options,
        )
        self.keep_versions = keep_versions

    @property
    def root(self) -> str:
        """Where the store is (a path or URL)."""
        return self.cache.root

    @property
    def storage_options(self) -> dict[str, Any]:
        """The fsspec options of the store."""
        return dict(self._options)

    # -- by fingerprint --------------------------------------------------

    def version_key(self, asset_key: dg.AssetKey, fingerprint: str) -> str:
        """The store key of the version of ``asset_key`` with recipe ``fingerprint``."""
        return derived_key(f"asset-version\0{asset_key.to_user_string()}", fingerprint)

    def path_for(self, asset_key: dg.AssetKey, fingerprint: str) -> str:
        """Where that version's manifest is (or would be) stored."""
        return self.cache.entry_url(self.version_key(asset_key, fingerprint))

    def contains(self, asset_key: dg.AssetKey, fingerprint: str) -> bool:
        """Whether that version is completely stored and looks intact (damaged: quarantined).

        One read of the version's record, which embeds its entries' manifests; then a
        stat per file locally, nothing more on object stores (files are checked when read).
        """
        return version_intact(self.cache, self.version_key(asset_key, fingerprint), cls=Dataset)

    def describe(self, asset_key: dg.AssetKey, fingerprint: str) -> StoredDataset:
        """The stored version's fingerprints and size (nothing written)."""
        return _as_output(
            fingerprint, describe_version(self.cache, self.version_key(asset_key, fingerprint))
        )

    def load(self, asset_key: dg.AssetKey, fingerprint: str) -> Dataset:
        """The stored dataset, memory-mapped when local; its fingerprint is ``fingerprint``.

        Raises:
            DatasetNotStoredError: The version is not stored, or is damaged (then quarantined).
        """
        dataset = open_version(self.cache, self.version_key(asset_key, fingerprint), cls=Dataset)
        if dataset is None:
            raise DatasetNotStoredError(
                f"Asset {asset_key.to_user_string()!r}: fingerprint {fingerprint!r} is not stored"
                f" in {self.root!r}, or part of it is damaged or was removed (a damaged entry is"
                " quarantined with a warning). Materialize the asset again to store it."
            )
        return dataset

    def load_as_stored(self, asset_key: dg.AssetKey, fingerprint: str) -> Dataset | IterableDataset:
        """The stored dataset as it was output: a stream for a streaming asset."""
        dataset = self.load(asset_key, fingerprint)
        record = version_record(self.cache, self.version_key(asset_key, fingerprint)) or {}
        return as_stream(dataset) if record.get(STREAM_FLAG) else dataset

    def save(
        self,
        asset_key: dg.AssetKey,
        dataset: Dataset | IterableDataset,
        *,
        hash_tree: HashNode | None = None,
        partition: str | None = None,
        computed_since: datetime.datetime | None = None,
        previous: str | None = None,
        parents: Mapping[str, str | CacheEntry] | None = None,
        parent_records: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> StoredDataset:
        """Store ``dataset`` under its fingerprint (a stream batch by batch, in bounded memory).

        What the store already holds is referenced, not copied; a version
        already stored is kept. ``hash_tree``: what the fingerprint was made of,
        for ``dagster-ds hash explain``; ``partition``: the asset partition it is;
        ``computed_since``: when its transforms started, so that ``bytes_written``
        counts what they stored (else only what this call copies); ``previous``: the
        fingerprint of the asset's version before, whose shards' content fingerprints
        are reused (an append hashes only the new shards); ``parents``: the parent
        versions it was computed from, by parameter (their store keys, or their entries),
        to say later which of their columns changed; of an entry of another store, what
        that needs of its record is kept with the version (``parent_records``, to which
        the given ``parent_records`` of ``parents``' keys are added: a promoted version's).
        """
        key = self.version_key(asset_key, dataset.fingerprint)
        stream = isinstance(dataset, IterableDataset)
        rows = (
            stream_to_dataset(dataset, self.cache)
            if isinstance(dataset, IterableDataset)
            else dataset
        )
        version = store_version(
            self.cache,
            key,
            rows,
            metadata={
                "asset": asset_key.to_user_string(),
                STREAM_FLAG: stream,
                "hash_tree": hash_tree.to_dict() if hash_tree is not None else None,
                PARENT_VERSIONS: _parent_keys(parents or {}),
                **self._parent_records(parents or {}, parent_records or {}),
                **({"partition": partition} if partition is not None else {}),
            },
            written_since=computed_since,
            previous=(
                version_record(self.cache, self.version_key(asset_key, previous))
                if previous is not None
                else None
            ),
        )
        if stream:
            _release(rows)
        return _as_output(dataset.fingerprint, version)

    def _parent_records(
        self, parents: Mapping[str, str | CacheEntry], carried: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, Any]:
        """``parent_records``: what comparing the parent versions of other stores needs."""
        keys = _parent_keys(parents).values()
        records: dict[str, Any] = {key: dict(carried[key]) for key in keys if key in carried}
        records.update(
            (entry.key, comparable_record(entry.metadata))
            for entry in parents.values()
            if isinstance(entry, CacheEntry) and not self.cache.holds(entry)
        )
        return {PARENT_RECORDS: records} if records else {}

    def versions(self, asset_key: dg.AssetKey) -> list[dict[str, Any]]:
        """The records of every stored version of ``asset_key``, newest first.

        Each has ``fingerprint`` (the recipe), ``content_fingerprint``, ``num_rows``,
        ``created``, the entry ``key`` and, for a partitioned asset, ``partition``.
        """
        name = asset_key.to_user_string()
        found = [
            {**info.metadata, "key": info.fingerprint, "created": info.created.isoformat()}
            for info in self.cache.ls()
            if info.metadata.get("kind") == VERSION_KIND and info.metadata.get("asset") == name
        ]
        return sorted(found, key=lambda record: str(record["created"]), reverse=True)

    def retain(
        self,
        asset_key: dg.AssetKey,
        instance: dg.DagsterInstance | None,
        *,
        current: str,
        partition: str | None = None,
    ) -> Retention | None:
        """Apply ``keep_versions`` to ``asset_key`` (by partition): ``current``, latest stay."""
        if self.keep_versions is None:
            return None
        pinned = {self.version_key(asset_key, current)}
        recorded = (
            recorded_fingerprint(instance, asset_key, partition) if instance is not None else None
        )
        if recorded is not None:
            pinned.add(self.version_key(asset_key, recorded))
        return retain(
            self.cache,
            self.keep_versions,
            pinned=pinned,
            assets={asset_key.to_user_string()},
            partitions={partition} if partition is not None else None,
        )

    def adopt(self, dataset: Dataset) -> Dataset:
        """``dataset`` with its shard tables in this store (copied once when elsewhere)."""
        return adopt(self.cache, dataset)

    def export(
        self, asset_key: dg.AssetKey, fingerprint: str, path: str, **save_options: Any
    ) -> None:
        """Write a stored version in ``save_to_disk`` layout (``datasets.load_from_disk`` reads it).

        Example:
            >>> import tempfile
            >>> store = DatasetStore(tempfile.mkdtemp())
            >>> numbers = Dataset.from_dict({"n": [1, 2]})
            >>> _ = store.save(dg.AssetKey("numbers"), numbers)
            >>> folder = tempfile.mkdtemp() + "/numbers"
            >>> store.export(dg.AssetKey("numbers"), numbers.fingerprint, folder)
        """
        self.load(asset_key, fingerprint).save_to_disk(path, **save_options)

    # -- the IO manager --------------------------------------------------

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Record where a dataset asset's version is (it stored it), or store a dataset."""
        key = _asset_key(context)
        if isinstance(obj, Dataset | IterableDataset):
            partition = context.asset_partition_key if context.has_asset_partitions else None
            obj = self.save(key, obj, partition=partition)
        if not isinstance(obj, StoredDataset):
            raise DatasetAssetOutputError(
                f"Asset {key.to_user_string()!r} output a {type(obj).__name__}, which"
                " DatasetIOManager cannot store: it stores dagster_ds datasets only. Return a"
                " Dataset, or give this asset another io_manager_key."
            )
        metadata: dict[str, Any] = {
            DatasetMetadataKey.PATH.value: dg.MetadataValue.path(
                self.path_for(key, obj.fingerprint)
            ),
            **size_metadata(obj.size),
            DatasetMetadataKey.BYTES_WRITTEN.value: dg.MetadataValue.int(obj.bytes_written),
        }
        recorded = context.output_metadata or {}
        if DatasetMetadataKey.RECIPE.value not in recorded:
            metadata[DatasetMetadataKey.RECIPE.value] = obj.fingerprint
        if DatasetMetadataKey.DATA_VERSION.value not in recorded:
            metadata[DatasetMetadataKey.DATA_VERSION.value] = obj.content_fingerprint
        context.add_output_metadata(metadata)

    def load_input(self, context: dg.InputContext) -> Dataset | IterableDataset:
        """The upstream dataset of this run if it ran in it, else of its latest materialization.

        Its fingerprint is its content fingerprint (the data version), so an
        upstream re-run that left the rows unchanged changes nothing downstream.
        A partitioned upstream gives the partitions the input's partition
        mapping selects: one partition as it is, several as one `Dataset`
        whose shards are the partitions, in partition order.
        """
        key = _asset_key(context)
        run_id = context.upstream_output.run_id if context.upstream_output is not None else None
        if context.has_asset_partitions:
            return self._load_partitions(context, key, run_id)
        record = input_record(context.instance, key, run_id)
        materialization = record.asset_materialization if record is not None else None
        found = fingerprints_of(materialization) if materialization is not None else None
        if record is None or found is None:
            raise DatasetNotStoredError(
                f"Asset {key.to_user_string()!r} has no materialization with a fingerprint in this"
                " Dagster instance, so there is no dataset to load. Materialize it first (select"
                " it together with its downstream assets)."
            )
        dataset = self._load_recorded(key, found)
        remember(dataset, record.storage_id)  # the step's provenance tags (_provenance.py)
        return dataset

    def _load_recorded(
        self, key: dg.AssetKey, found: tuple[str, str | None]
    ) -> Dataset | IterableDataset:
        """A recorded version, under its content fingerprint."""
        fingerprint, content = found
        dataset = self.load_as_stored(key, fingerprint)
        if content is None or content == dataset.fingerprint:
            return dataset
        if isinstance(dataset, IterableDataset):
            from dagster_ds.orchestration._streams import relabel_stream

            return relabel_stream(dataset, content)
        return dataset._relabelled(content)  # pyright: ignore[reportPrivateUsage]

    def _load_partitions(
        self, context: dg.InputContext, key: dg.AssetKey, run_id: str | None
    ) -> Dataset | IterableDataset:
        """The partitions the input's mapping selects: one as is, several as shards of one."""
        partitions = list(context.asset_partition_keys)
        chosen = input_materializations(
            context.instance, key, partitions, run_id, allow_missing=allows_missing(context)
        )
        loaded: list[Dataset] = []
        streams = False
        for partition, materialization in chosen.items():
            found = fingerprints_of(materialization)
            if found is None:
                raise DatasetNotStoredError(
                    f"Asset {key.to_user_string()!r}: the materialization of partition"
                    f" {partition!r} records no fingerprint; it was not stored by a"
                    " DatasetIOManager. Materialize that partition again."
                )
            fingerprint, content = found
            dataset = self.load(key, fingerprint)
            if content is not None and content != dataset.fingerprint:
                dataset = dataset._relabelled(content)  # pyright: ignore[reportPrivateUsage]
            record = version_record(self.cache, self.version_key(key, fingerprint)) or {}
            streams = streams or bool(record.get(STREAM_FLAG))
            loaded.append(dataset)
        combined = loaded[0] if len(loaded) == 1 else dataset_of_parts(loaded)
        result = as_stream(combined) if streams else combined
        # The step's provenance tags: the fingerprint of the partitions it read (_provenance.py).
        newest = newest_record_id(context.instance, key, list(chosen), observed=False)
        if newest is not None:
            remember(result, newest)
        return result


def pinned_versions(instance: dg.DagsterInstance, store: DatasetStore) -> set[str]:
    """The version keys the instance's latest materializations of stored assets record.

    For a partitioned asset, the latest materialization of each stored partition.
    """
    pinned: set[str] = set()
    stored: dict[str, set[str]] = {}
    for record in all_versions(store.cache):
        partition = record.get("partition")
        stored.setdefault(str(record.get("asset")), set())
        if isinstance(partition, str):
            stored[str(record.get("asset"))].add(partition)
    for name, partitions in stored.items():
        key = dg.AssetKey.from_user_string(name)
        recorded = recorded_fingerprint(instance, key)
        if recorded is not None:
            pinned.add(store.version_key(key, recorded))
        if partitions:
            for materialization in latest_materializations(
                instance, key, sorted(partitions)
            ).values():
                found = fingerprints_of(materialization)
                if found is not None:
                    pinned.add(store.version_key(key, found[0]))
    return pinned


def default_store_root(instance: dg.DagsterInstance | None) -> str:
    """The store of an instance: ``dagster_ds`` in its storage folder (else the dataset cache)."""
    if instance is None:
        return default_cache_root()
    return os.path.join(instance.storage_directory(), "dagster_ds")


def input_record(
    instance: dg.DagsterInstance, key: dg.AssetKey, run_id: str | None
) -> dg.EventLogRecord | None:
    """The materialization record of ``key`` in run ``run_id`` if it has one, else the latest."""
    if run_id is not None:
        record = records_in_run(instance, key, run_id).get(None)
        if record is not None:
            return record
    records = instance.fetch_materializations(key, limit=1).records
    return records[0] if records else None


def input_version(
    instance: dg.DagsterInstance, key: dg.AssetKey, run_id: str | None
) -> tuple[str, str | None] | None:
    """(recipe, content) fingerprints of ``key`` as materialized in ``run_id``, else latest."""
    record = input_record(instance, key, run_id)
    materialization = record.asset_materialization if record is not None else None
    return fingerprints_of(materialization) if materialization is not None else None


def fingerprints_of(materialization: dg.AssetMaterialization) -> tuple[str, str | None] | None:
    """(recipe, content) fingerprints a materialization records (content None: unknown)."""
    metadata = materialization.metadata
    recipe = recorded_value(metadata, DatasetMetadataKey.RECIPE)
    content = recorded_value(metadata, DatasetMetadataKey.DATA_VERSION)
    data_version = (materialization.tags or {}).get(_DATA_VERSION_TAG)
    if not isinstance(recipe, str):
        return (data_version, None) if data_version is not None else None
    return recipe, content if isinstance(content, str) else None


def recorded_fingerprint(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None = None
) -> str | None:
    """The recipe fingerprint of the latest materialization of ``key`` (``partition``), or None."""
    if partition is None:
        found = input_version(instance, key, None)
    else:
        materialization = latest_materialization(instance, key, partition)
        found = fingerprints_of(materialization) if materialization is not None else None
    return found[0] if found is not None else None


def _parent_keys(parents: Mapping[str, str | CacheEntry]) -> dict[str, str]:
    """The store keys of ``parents``' versions, by parameter."""
    return {name: key if isinstance(key, str) else key.key for name, key in parents.items()}


def _as_output(fingerprint: str, version: StoredVersion) -> StoredDataset:
    return StoredDataset(
        fingerprint, version.content_fingerprint, version.size, version.bytes_written
    )


def _release(dataset: Dataset) -> None:
    """Release the reader leases a dataset holds (it is not used any more)."""
    for entry in dataset._entries:  # pyright: ignore[reportPrivateUsage]
        entry.close()


def _asset_key(context: dg.InputContext | dg.OutputContext) -> dg.AssetKey:
    if not context.has_asset_key:
        raise DatasetAssetDefinitionError(
            f"DatasetIOManager stores asset outputs only; {context.name!r} is an op output."
            " Use it as the io_manager of assets."
        )
    return context.asset_key
