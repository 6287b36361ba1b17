"""DatasetIOManager: datasets stored by fingerprint under any fsspec URL.

Layout under ``base_dir`` (a local folder by default, or ``s3://...``,
``gs://...``, any fsspec URL)::

    <asset key path>/<fingerprint>/   data-NNNNN-of-MMMMM.arrow  dataset_info.json  state.json

Each folder is what `Dataset.save_to_disk` writes (``datasets.load_from_disk``
reads it too). Storage is content-addressed: a fingerprint names one dataset,
so a folder is written once and never replaced, and several processes (the
multiprocess executor, several runs) can share it without locks:

- local folders: the dataset is written under a hidden temporary name and
  published by one ``rename``; a writer that loses the race discards its copy;
- object stores: files are uploaded with ``state.json`` last, and a folder
  without ``state.json`` does not count as stored; concurrent writers of one
  fingerprint upload identical bytes.

An input is loaded from the fingerprint Dagster recorded for the upstream
asset's latest materialization (its data version), memory-mapped when local.
A streaming asset (an `IterableDataset`) is written batch by batch, in bounded
memory, and read back as a stream (over the memory-mapped files).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg
from fsspec.implementations.local import LocalFileSystem
from pydantic import Field
from upath import UPath

from dagster_ds.arrow import Dataset
from dagster_ds.errors import (
    DatasetAssetDefinitionError,
    DatasetAssetOutputError,
    DatasetNotStoredError,
)
from dagster_ds.orchestration._streams import as_stream, is_stream, write_stream
from dagster_ds.orchestration.metadata import DatasetMetadataKey
from dagster_ds.streaming import IterableDataset

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["DatasetIOManager", "DatasetStore"]

_STATE_FILE = "state.json"
_DATA_VERSION_TAG = "dagster/data_version"


@dataclass(frozen=True)
class StoredDataset:
    """What a skipped dataset asset outputs: a fingerprint the storage already holds."""

    fingerprint: str
    size: int | None = None


class DatasetIOManager(dg.ConfigurableIOManagerFactory):
    """Stores each dataset asset's value by fingerprint under a folder or fsspec URL.

    Datasets are saved in the ``save_to_disk`` layout under
    ``<base_dir>/<asset key>/<fingerprint>/``, written once (content-addressed,
    atomic, safe for several processes) and loaded memory-mapped when local.
    `dataset_asset` asks it whether a fingerprint is already stored, to skip
    its function.

    Attributes:
        base_dir: A local folder or any fsspec URL (``s3://bucket/datasets``).
            Default: ``dagster_ds`` in the Dagster instance's storage folder.
        storage_options: fsspec options for ``base_dir`` (``endpoint_url``,
            ``key``, ``secret``...; use ``dg.EnvVar`` for secrets).

    Example:
        >>> import dagster as dg
        >>> defs = dg.Definitions(
        ...     assets=[],
        ...     resources={"io_manager": DatasetIOManager(base_dir="s3://bucket/datasets")},
        ... )
    """

    base_dir: str | None = Field(
        default=None,
        description="Local folder or fsspec URL; default: the instance's storage folder.",
    )
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options for base_dir (credentials, endpoint)."
    )

    def create_io_manager(self, context: dg.InitResourceContext) -> DatasetStore:
        """The IO manager of one run (or step process)."""
        base_dir = self.base_dir or _default_base_dir(context)
        return DatasetStore(base_dir, self.storage_options)


class DatasetStore(dg.UPathIOManager):
    """The IO manager `DatasetIOManager` creates: saves, finds and loads datasets by fingerprint.

    Use it outside Dagster to open what a pipeline stored (the fingerprint is the
    asset's recorded data version).

    Example:
        >>> import tempfile
        >>> store = DatasetStore(tempfile.mkdtemp())
        >>> numbers = Dataset.from_dict({"n": [1, 2]})
        >>> store.save(dg.AssetKey("numbers"), numbers)
        True
        >>> store.load(dg.AssetKey("numbers"), numbers.fingerprint)["n"][:]
        [1, 2]
    """

    def __init__(self, base_dir: str, storage_options: Mapping[str, Any] | None = None) -> None:
        options = dict(storage_options or {})
        super().__init__(base_path=UPath(base_dir, **options))
        self._options = options

    # -- by fingerprint --------------------------------------------------

    def path_for(self, asset_key: dg.AssetKey, fingerprint: str) -> UPath:
        """Where the dataset of ``asset_key`` with ``fingerprint`` is (or would be) stored."""
        return self._base_path.joinpath(*asset_key.path, fingerprint)

    def contains(self, asset_key: dg.AssetKey, fingerprint: str) -> bool:
        """Whether that dataset is completely stored."""
        return self.path_exists(self.path_for(asset_key, fingerprint) / _STATE_FILE)

    def load(self, asset_key: dg.AssetKey, fingerprint: str) -> Dataset:
        """The stored dataset, memory-mapped when local; its fingerprint is ``fingerprint``."""
        path = self._existing(asset_key, fingerprint)
        return Dataset.load_from_disk(str(path), storage_options=self._options or None)

    def load_as_stored(self, asset_key: dg.AssetKey, fingerprint: str) -> Dataset | IterableDataset:
        """The stored dataset as it was output: a stream for a streaming asset."""
        path = self._existing(asset_key, fingerprint)
        state = json.loads(self.fs.cat_file((path / _STATE_FILE).path))
        dataset = Dataset.load_from_disk(str(path), storage_options=self._options or None)
        return as_stream(dataset, fingerprint) if is_stream(state) else dataset

    def save(self, asset_key: dg.AssetKey, dataset: Dataset | IterableDataset) -> bool:
        """Store ``dataset`` under its fingerprint; False if it was already stored.

        A stream is consumed batch by batch (bounded memory).
        """
        target = self.path_for(asset_key, dataset.fingerprint)
        if self.contains(asset_key, dataset.fingerprint):
            return False
        saved = dataset

        def write(folder: str) -> None:
            if isinstance(saved, IterableDataset):
                write_stream(saved, folder)
            else:
                saved.save_to_disk(folder)

        if isinstance(self.fs, LocalFileSystem):
            return _save_local(write, dataset.fingerprint, target)
        _save_remote(write, self.fs, target)
        return True

    def _existing(self, asset_key: dg.AssetKey, fingerprint: str) -> UPath:
        path = self.path_for(asset_key, fingerprint)
        if not self.path_exists(path / _STATE_FILE):
            raise DatasetNotStoredError(
                f"Asset {asset_key.to_user_string()!r}: fingerprint {fingerprint!r} is not stored"
                f" at {str(path)!r} (was base_dir changed or the folder deleted?). Materialize"
                " the asset again to store it."
            )
        return path

    def size_of(self, asset_key: dg.AssetKey, fingerprint: str) -> int:
        """The bytes stored for that dataset."""
        total: Any = self.fs.du(self.path_for(asset_key, fingerprint).path, total=True)
        return int(total)

    # -- the IO manager --------------------------------------------------

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        """Not used: outputs are stored by fingerprint in `handle_output`."""
        raise NotImplementedError("DatasetStore stores by fingerprint: use handle_output")

    def load_from_path(self, context: dg.InputContext, path: UPath) -> Dataset:
        """Load the dataset saved in ``path``."""
        return Dataset.load_from_disk(str(path), storage_options=self._options or None)

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Store a dataset under its fingerprint (once), or accept a skipped asset's marker."""
        key = _asset_key(context)
        size: int | None = None
        if isinstance(obj, StoredDataset):
            fingerprint, written, size = obj.fingerprint, False, obj.size
        elif isinstance(obj, Dataset | IterableDataset):
            fingerprint = obj.fingerprint
            written = self.save(key, obj)
        else:
            raise DatasetAssetOutputError(
                f"Asset {key.to_user_string()!r} output a {type(obj).__name__}, which"
                " DatasetIOManager cannot store: it stores dagster_ds datasets only. Return a"
                " Dataset, or give this asset another io_manager_key."
            )
        path = self.path_for(key, fingerprint)
        if written:
            context.log.info(f"Stored {key.to_user_string()} ({fingerprint}) at {path}")
        elif not isinstance(obj, StoredDataset):  # (a skipped asset has said so already)
            context.log.info(
                f"{key.to_user_string()} ({fingerprint}) already at {path}: not rewritten"
            )
        metadata: dict[str, Any] = {
            DatasetMetadataKey.PATH.value: dg.MetadataValue.path(str(path)),
            DatasetMetadataKey.SIZE.value: dg.MetadataValue.int(
                size if size is not None else self.size_of(key, fingerprint)
            ),
        }
        if DatasetMetadataKey.FINGERPRINT.value not in (context.output_metadata or {}):
            metadata[DatasetMetadataKey.FINGERPRINT.value] = fingerprint
        context.add_output_metadata(metadata)

    def load_input(self, context: dg.InputContext) -> Dataset | IterableDataset:
        """The dataset of the upstream asset's latest materialization, by its fingerprint."""
        key = _asset_key(context)
        fingerprint = recorded_fingerprint(context.instance, key)
        if fingerprint is None:
            raise DatasetNotStoredError(
                f"Asset {key.to_user_string()!r} has no materialization with a fingerprint in this"
                " Dagster instance, so there is no dataset to load. Materialize it first (select"
                " it together with its downstream assets)."
            )
        return self.load_as_stored(key, fingerprint)


def recorded_fingerprint(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The fingerprint of the latest materialization of ``key``, or None."""
    event = instance.get_latest_materialization_event(key)
    materialization = event.asset_materialization if event is not None else None
    if materialization is None:
        return None
    value = materialization.metadata.get(DatasetMetadataKey.FINGERPRINT.value)
    if value is not None and isinstance(value.value, str):
        return value.value
    return (materialization.tags or {}).get(_DATA_VERSION_TAG)


def _asset_key(context: dg.InputContext | dg.OutputContext) -> dg.AssetKey:
    if not context.has_asset_key:
        raise DatasetAssetDefinitionError(
            f"DatasetIOManager stores asset outputs only; {context.name!r} is an op output."
            " Use it as the io_manager of assets."
        )
    if context.has_asset_partitions:
        raise DatasetAssetDefinitionError(
            f"Asset {context.asset_key.to_user_string()!r} is partitioned, which DatasetIOManager"
            " does not support: a fingerprint already names each version of a dataset."
        )
    return context.asset_key


def _save_local(write: Callable[[str], None], fingerprint: str, target: UPath) -> bool:
    target_path = str(target)
    os.makedirs(os.path.dirname(target_path), exist_ok=True)
    staging = os.path.join(
        os.path.dirname(target_path), f".{fingerprint}.writing-{secrets.token_hex(4)}"
    )
    try:
        write(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    try:
        os.rename(staging, target_path)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if os.path.exists(os.path.join(target_path, _STATE_FILE)):
            return False  # another process stored the same fingerprint first
        raise
    return True


def _save_remote(write: Callable[[str], None], fs: AbstractFileSystem, target: UPath) -> None:
    with tempfile.TemporaryDirectory(prefix="dagster-ds-upload-") as folder:
        local = os.path.join(folder, "dataset")
        write(local)
        names = sorted(os.listdir(local), key=lambda name: (name == _STATE_FILE, name))
        for name in names:  # state.json last: the folder counts as stored only then
            fs.put_file(os.path.join(local, name), f"{target.path}/{name}")


def _default_base_dir(context: dg.InitResourceContext) -> str:
    instance = context.instance
    if instance is not None:
        return os.path.join(instance.storage_directory(), "dagster_ds")
    return os.path.abspath(os.path.join(".dagster_ds", "storage"))
