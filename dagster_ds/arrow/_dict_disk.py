"""DatasetDict.save_to_disk / load_from_disk in the anchor's layout.

The folder holds ``dataset_dict.json`` (``{"splits": [...]}``) and one saved
dataset folder per split. It is written into a staging folder and published by
`publish_folder`, ``dataset_dict.json`` last, so an interrupted save leaves
nothing loadable.

`DatasetDict.load_from_disk` reads the split names here (`saved_split_names`) and
loads each split itself: this module imports neither `Dataset` nor `DatasetDict`.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import fsspec

from dagster_ds.arrow._disk import STATE_FILE, publish_saved, staged_folder, write_dataset
from dagster_ds.cache import open_storage
from dagster_ds.errors import NotASavedDatasetError

if TYPE_CHECKING:
    from dagster_ds.arrow._dict import DatasetDict

DICT_FILE = "dataset_dict.json"


def save_dataset_dict(
    splits: DatasetDict,
    path: str,
    max_shard_size: int | str | None,
    num_shards: Mapping[str, int] | None,
    storage_options: Mapping[str, Any] | None,
) -> None:
    """Write every split under ``path`` and publish the folder atomically."""
    storage = open_storage(path, storage_options)
    with staged_folder(storage) as staging:
        for name, split in splits.items():
            folder = storage.child(staging, name)
            state = write_dataset(
                split, storage, folder, max_shard_size, (num_shards or {}).get(name)
            )
            storage.write_bytes(storage.child(folder, STATE_FILE), state)
        listing = json.dumps({"splits": list(splits)}).encode()
        publish_saved(storage, staging, DICT_FILE, listing, path)


def saved_split_names(path: str, storage_options: Mapping[str, Any] | None) -> list[str]:
    """The names of the splits saved under ``path`` (ours or the anchor's), in order."""
    fs, root = fsspec.core.url_to_fs(path, **dict(storage_options or {}))
    listing = posixpath.join(root.rstrip("/"), DICT_FILE)
    if not fs.exists(listing):
        raise NotASavedDatasetError(
            f"{path!r} holds no saved DatasetDict ({DICT_FILE} is missing): save_to_disk "
            "never finished there, or it is a single Dataset (use Dataset.load_from_disk)."
        )
    return json.loads(fs.cat_file(listing))["splits"]


def is_saved_dataset_dict(path: str, storage_options: Mapping[str, Any] | None) -> bool:
    """Whether ``path`` is a folder written by `DatasetDict.save_to_disk`."""
    fs, root = fsspec.core.url_to_fs(path, **dict(storage_options or {}))
    return bool(fs.exists(posixpath.join(root.rstrip("/"), DICT_FILE)))
