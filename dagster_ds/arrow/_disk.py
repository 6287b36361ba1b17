"""save_to_disk / load_from_disk, in the anchor's folder layout.

A saved dataset is a folder with ``data-NNNNN-of-MMMMM.arrow`` (Arrow IPC
streams), ``dataset_info.json`` (features) and ``state.json`` (fingerprint,
format, split), so `datasets.load_from_disk` reads what we save and the other
way round. Unlike the anchor, the fingerprint survives a save/load cycle
exactly, and saving is atomic, through the cache's own publishing
(`publish_folder`): ``state.json`` is written last, a local folder appears by
one rename, and a folder without ``state.json`` is refused.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import secrets
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import fsspec
import pyarrow as pa

from dagster_ds.arrow._formatting import OutputFormat
from dagster_ds.arrow._info import prose_of
from dagster_ds.cache import Storage, open_storage, parse_size, publish_folder
from dagster_ds.errors import NotASavedDatasetError, SaveConflictError
from dagster_ds.features import Features
from dagster_ds.fingerprint import LineageStep

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_DEFAULT_MAX_SHARD_BYTES = 500 << 20
_WRITE_BATCH = 10_000
STATE_FILE = "state.json"
INFO_FILE = "dataset_info.json"


def save_to_disk(
    dataset: Dataset,
    path: str,
    max_shard_size: int | str | None,
    num_shards: int | None,
    storage_options: Mapping[str, Any] | None,
) -> None:
    """Write ``dataset`` under ``path`` (a folder or any fsspec URL), replacing it atomically."""
    storage = open_storage(path, storage_options)
    with staged_folder(storage) as staging:
        state = write_dataset(dataset, storage, staging, max_shard_size, num_shards)
        publish_saved(storage, staging, STATE_FILE, state, path)


def write_dataset(
    dataset: Dataset,
    storage: Storage,
    folder: str,
    max_shard_size: int | str | None,
    num_shards: int | None,
) -> bytes:
    """Write the data files and ``dataset_info.json`` into ``folder``; return ``state.json``."""
    shards = num_shards or _shard_count(dataset, max_shard_size)
    shards = max(1, min(shards, max(len(dataset), 1)))
    storage.makedirs(folder)
    names = _write_shards(dataset, storage, folder, shards)
    # Features keep the column order: their keys are not sorted.
    info = {**dataset._prose, "features": dataset.features.to_dict()}  # pyright: ignore[reportPrivateUsage]
    storage.write_bytes(storage.child(folder, INFO_FILE), _json(info, sort_keys=False))
    return _json(_state(dataset, names))


@contextlib.contextmanager
def staged_folder(storage: Storage) -> Iterator[str]:
    """A new folder next to the storage's root, removed unless it was published."""
    staging = f"{storage.root.rstrip('/')}.saving-{secrets.token_hex(4)}"
    storage.makedirs(staging)
    try:
        yield staging
    finally:
        storage.remove_tree(staging)


def publish_saved(storage: Storage, staging: str, commit: str, data: bytes, path: str) -> None:
    """Publish a staged save at the storage's root, ``commit`` last (see `publish_folder`)."""
    if not publish_folder(storage, staging, storage.root, commit, data, replace=True):
        raise SaveConflictError(
            f"Could not save to {path!r}: another save_to_disk replaced it at the same time, "
            "again and again. Save each dataset to its own path, or one at a time."
        )


def load_from_disk(
    cls: type[Dataset], path: str, storage_options: Mapping[str, Any] | None
) -> Dataset:
    """The dataset saved under ``path``, memory-mapped when it is local."""
    fs, root = fsspec.core.url_to_fs(path, **dict(storage_options or {}))
    root = root.rstrip("/")
    state_path = posixpath.join(root, STATE_FILE)
    if not fs.exists(state_path):
        raise NotASavedDatasetError(
            f"{path!r} holds no saved dataset ({STATE_FILE} is missing): save_to_disk never "
            "finished there, or the path is wrong. Save the dataset again with save_to_disk()."
        )
    state = json.loads(fs.cat_file(state_path))
    info = json.loads(fs.cat_file(posixpath.join(root, INFO_FILE)))
    features = Features.from_dict(info["features"])
    tables = [_read_shard(fs, posixpath.join(root, f["filename"])) for f in state["_data_files"]]
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if list(features) != table.column_names and set(features) == set(table.column_names):
        # Folders written with sorted feature keys: the data files hold the column order.
        features = Features({name: features[name] for name in table.column_names})
    if table.schema != features.arrow_schema:
        table = table.cast(features.arrow_schema)
    dataset = cls._derived(
        None, data=table, indices=None, fingerprint=state["_fingerprint"], features=features
    )  # pyright: ignore[reportPrivateUsage]
    dataset._split = state.get("_split")  # pyright: ignore[reportPrivateUsage]
    dataset._prose = prose_of(info)  # pyright: ignore[reportPrivateUsage]
    dataset._output_format = OutputFormat.create(  # pyright: ignore[reportPrivateUsage]
        state.get("_format_type"),
        state.get("_format_columns"),
        state.get("_output_all_columns", False),
        **state.get("_format_kwargs", {}),
    )
    lineage = state.get("_dagster_ds", {}).get("lineage", [])
    dataset._lineage = tuple(LineageStep.from_dict(step) for step in lineage)  # pyright: ignore[reportPrivateUsage]
    return dataset


def _shard_count(dataset: Dataset, max_shard_size: int | str | None) -> int:
    limit = parse_size(max_shard_size) if max_shard_size is not None else _DEFAULT_MAX_SHARD_BYTES
    table_bytes = dataset.data.nbytes
    share = len(dataset) / dataset.data.num_rows if dataset.data.num_rows else 0
    return max(1, -(-int(table_bytes * share) // limit))


def _write_shards(dataset: Dataset, storage: Storage, folder: str, shards: int) -> list[str]:
    names: list[str] = []
    size = len(dataset)
    schema = dataset.features.arrow_schema
    for index in range(shards):
        start, stop = size * index // shards, size * (index + 1) // shards
        name = f"data-{index:05d}-of-{shards:05d}.arrow"
        with storage.open_write(storage.child(folder, name)) as file:
            with pa.ipc.new_stream(file, schema) as stream:
                for offset in range(start, stop, _WRITE_BATCH):
                    table = dataset._read(slice(offset, min(offset + _WRITE_BATCH, stop)))  # pyright: ignore[reportPrivateUsage]
                    stream.write_table(table.cast(schema) if table.schema != schema else table)
            storage.sync(file)
        names.append(name)
    return names


def _state(dataset: Dataset, names: list[str]) -> dict[str, Any]:
    output = dataset._output_format.as_dict()  # pyright: ignore[reportPrivateUsage]
    return {
        "_data_files": [{"filename": name} for name in names],
        "_fingerprint": dataset.fingerprint,
        "_format_columns": output["columns"],
        "_format_kwargs": output["format_kwargs"],
        "_format_type": output["type"],
        "_output_all_columns": output["output_all_columns"],
        "_split": dataset.split,
        "_dagster_ds": {"lineage": [step.to_dict() for step in dataset.lineage]},
    }


def _json(data: Mapping[str, Any], sort_keys: bool = True) -> bytes:
    return json.dumps(data, indent=2, sort_keys=sort_keys).encode()


def _read_shard(fs: Any, path: str) -> pa.Table:
    if (
        getattr(fs, "protocol", None) in ("file", ("file", "local"))
        or fs.__class__.__name__ == "LocalFileSystem"
    ):
        return pa.ipc.open_stream(pa.memory_map(path)).read_all()
    return pa.ipc.open_stream(pa.py_buffer(fs.cat_file(path))).read_all()
