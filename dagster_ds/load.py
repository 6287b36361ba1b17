"""load_dataset and load_from_disk: datasets from files, folders and fsspec URLs.

A loaded split is cached under a fingerprint of its source files' content
(local files) or storage checksums (remote files) and of the reading options,
so loading unchanged files again, in any process, reads the cache.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from dagster_ds.arrow import (
    DEFAULT_SHARD_BYTES,
    Dataset,
    file_transforms,
    in_cache_dir,
    load_split,
    shard_bytes_of,
    split_fingerprint,
)
from dagster_ds.errors import InvalidArgumentError
from dagster_ds.features import Features
from dagster_ds.formats import (
    FORMATS,
    DataFiles,
    Filters,
    ResolvedFile,
    infer_format,
    resolve_data_files,
)

if TYPE_CHECKING:
    from dagster_ds.arrow import DatasetDict
    from dagster_ds.streaming import IterableDataset, IterableDatasetDict

__all__ = ["load_dataset", "load_from_disk"]


@overload
def load_dataset(
    path: str,
    name: str | None = None,
    data_dir: str | None = None,
    data_files: DataFiles | None = None,
    *,
    split: str,
    features: Features | None = None,
    streaming: Literal[False] = False,
    storage_options: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    shard_bytes: int | str | None = DEFAULT_SHARD_BYTES,
    **reader_options: Any,
) -> Dataset: ...
@overload
def load_dataset(
    path: str,
    name: str | None = None,
    data_dir: str | None = None,
    data_files: DataFiles | None = None,
    split: None = None,
    features: Features | None = None,
    streaming: Literal[False] = False,
    storage_options: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    shard_bytes: int | str | None = DEFAULT_SHARD_BYTES,
    **reader_options: Any,
) -> DatasetDict: ...
@overload
def load_dataset(
    path: str,
    name: str | None = None,
    data_dir: str | None = None,
    data_files: DataFiles | None = None,
    *,
    split: str,
    features: Features | None = None,
    streaming: Literal[True],
    storage_options: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    shard_bytes: int | str | None = DEFAULT_SHARD_BYTES,
    **reader_options: Any,
) -> IterableDataset: ...
@overload
def load_dataset(
    path: str,
    name: str | None = None,
    data_dir: str | None = None,
    data_files: DataFiles | None = None,
    split: None = None,
    features: Features | None = None,
    *,
    streaming: Literal[True],
    storage_options: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    shard_bytes: int | str | None = DEFAULT_SHARD_BYTES,
    **reader_options: Any,
) -> IterableDatasetDict: ...
def load_dataset(
    path: str,
    name: str | None = None,
    data_dir: str | None = None,
    data_files: DataFiles | None = None,
    split: str | None = None,
    features: Features | None = None,
    streaming: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    shard_bytes: int | str | None = DEFAULT_SHARD_BYTES,
    **reader_options: Any,
) -> Dataset | DatasetDict | IterableDataset | IterableDatasetDict:
    r"""Load a dataset from data files, as ``datasets.load_dataset`` does.

    ``path`` is a format name (``"parquet"``, ``"json"``, ``"csv"``, ``"text"``,
    ``"arrow"``) with ``data_files``, or a file, folder or fsspec URL whose
    files are read. ``data_files`` is a path, a glob, a list, or a dict of
    splits. Parquet honours ``columns=`` and ``filters=`` (row groups that
    cannot match are not read). Other keywords go to the format's reader
    (``field=`` for JSON, ``delimiter=`` for CSV...).

    With ``streaming=True`` nothing is read up front: the result is an
    `IterableDataset` (one shard per file) read lazily, batch by batch, in bounded
    memory; its fingerprint equals the non-streaming dataset's.

    ``path`` may also be a Hub dataset repository, ``"namespace/name"`` (when no
    local file or folder has that name): ``name`` picks a config of its card
    (default: the card's default config), ``revision`` a branch, tag or commit,
    ``token`` the access token. Files are read through ``HfFileSystem`` at the
    resolved commit, whose id is part of the fingerprint: a new commit on the Hub
    gives a new fingerprint, the same commit reuses the cache in any process.
    The card's ``dataset_info`` features are used (so `ClassLabel` names come
    back). The Hub is ``endpoint`` if given, else ``HF_ENDPOINT`` (read at call
    time), else https://huggingface.co.

    ``cache_dir`` is the cache the loaded splits are stored in (and found in, by any
    process given the same folder), instead of ``$DAGSTER_DS_CACHE``.

    ``shard_bytes`` groups small files: consecutive files smaller than it are
    read into one shard of about that many source bytes (bytes, or a size such
    as ``"16MiB"``; default 1 MiB), so a split of thousands of tiny files is
    not thousands of cache entries per transform. A file of that size or more
    is a shard of its own, as is every file with ``shard_bytes=0`` (or None).
    Where a group ends depends on its files' content, so appending, removing or
    changing a file recomputes the rows of at most 3 shards around it, and
    appending a file only the last one's. The rows, their order and the
    dataset's fingerprint do not depend on it; nor does a stream, one shard
    per file.

    Returns:
        The ``split`` asked for, else a `DatasetDict` of every split
        (`IterableDataset` and `IterableDatasetDict` when streaming).

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "rows.jsonl").write_text('{"a": 1}\n{"a": 2}\n')
        >>> load_dataset("json", data_files=str(folder / "rows.jsonl"), split="train")["a"][:]
        [1, 2]
    """
    grouping = shard_bytes_of(shard_bytes)
    with in_cache_dir(cache_dir):
        return _load_dataset(
            path,
            name,
            data_dir,
            data_files,
            split,
            features,
            streaming,
            storage_options,
            columns,
            filters,
            revision,
            token,
            endpoint,
            reader_options,
            grouping,
        )


def _load_dataset(
    path: str,
    name: str | None,
    data_dir: str | None,
    data_files: DataFiles | None,
    split: str | None,
    features: Features | None,
    streaming: bool,
    storage_options: Mapping[str, Any] | None,
    columns: Sequence[str] | None,
    filters: Filters | None,
    revision: str | None,
    token: str | None,
    endpoint: str | None,
    reader_options: dict[str, Any],
    shard_bytes: int,
) -> Dataset | DatasetDict | IterableDataset | IterableDatasetDict:
    origin: dict[str, Any] | None = None
    if path not in FORMATS and _is_hub_repo(path):  # a format name: no Hub client imported
        from dagster_ds.hub import resolve_hub_dataset

        hub = resolve_hub_dataset(
            path, name, data_dir, data_files, revision=revision, token=token, endpoint=endpoint
        )
        fmt, patterns, origin = None, hub.data_files, hub.origin
        storage_options = {**hub.storage_options, **dict(storage_options or {})}
        if features is None and hub.features is not None:
            wanted_columns = list(columns) if columns is not None else list(hub.features)
            features = Features({c: hub.features[c] for c in wanted_columns if c in hub.features})
    else:
        fmt, patterns = _format_and_files(path, data_dir, data_files)
    resolved = resolve_data_files(patterns, storage_options=storage_options)
    if split is not None and split not in resolved:
        raise InvalidArgumentError(
            f"load_dataset: unknown split {split!r}; the data files give {sorted(resolved)}."
        )
    wanted = [split] if split is not None else list(resolved)
    if streaming:
        return _stream(
            wanted,
            split,
            resolved,
            fmt,
            features,
            columns,
            filters,
            reader_options,
            storage_options,
            origin,
        )
    loaded = {
        wanted_split: load_split(
            wanted_split,
            resolved[wanted_split],
            fmt,
            features,
            columns,
            filters,
            reader_options,
            storage_options,
            origin,
            cls=Dataset,
            shard_bytes=shard_bytes,
        )
        for wanted_split in wanted
    }
    if split is not None:
        return loaded[split]
    from dagster_ds.arrow import DatasetDict  # imported at its first use

    return DatasetDict(loaded)


def load_from_disk(
    dataset_path: str,
    keep_in_memory: bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Dataset | DatasetDict:
    """Load a dataset saved by `Dataset.save_to_disk` or `DatasetDict.save_to_disk`.

    Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp() + "/saved"
        >>> Dataset.from_dict({"a": [1]}).save_to_disk(folder)
        >>> load_from_disk(folder)["a"][:]
        [1]
    """
    from dagster_ds.arrow import DatasetDict, is_saved_dataset_dict

    if is_saved_dataset_dict(str(dataset_path), storage_options):
        return DatasetDict.load_from_disk(dataset_path, keep_in_memory, storage_options)
    return Dataset.load_from_disk(dataset_path, keep_in_memory, storage_options)


def _is_hub_repo(path: str) -> bool:
    """Whether ``path`` names a Hub dataset repository rather than local files."""
    from dagster_ds.hub import looks_like_hub_id

    return looks_like_hub_id(path)


def _format_and_files(
    path: str, data_dir: str | None, data_files: DataFiles | None
) -> tuple[str | None, DataFiles]:
    if path in FORMATS:
        if data_files is None and data_dir is None:
            raise InvalidArgumentError(
                f"load_dataset({path!r}) needs data_files=... (a path, glob, list or dict "
                "of splits) or data_dir=..."
            )
        return path, data_files if data_files is not None else str(data_dir)
    if data_files is not None:
        return None, data_files
    return None, os.path.join(path, data_dir) if data_dir else path


def _stream(
    wanted: list[str],
    split: str | None,
    resolved: Mapping[str, list[ResolvedFile]],
    fmt: str | None,
    features: Features | None,
    columns: Sequence[str] | None,
    filters: Filters | None,
    options: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None,
    origin: Mapping[str, Any] | None = None,
) -> IterableDataset | IterableDatasetDict:
    """The splits as streams: nothing is read (or hashed) until used."""
    from dagster_ds.streaming import IterableDatasetDict, stream_files

    def one(name: str) -> IterableDataset:
        # A stream is fingerprinted when first asked, maybe long after: by the files' stat then.
        files = [dataclasses.replace(file, stat=None) for file in resolved[name]]
        file_format = fmt or infer_format([file.url for file in files])

        def fingerprint() -> str:
            return split_fingerprint(
                file_transforms(
                    files, file_format, features, columns, filters, options, storage_options, origin
                )
            )

        return stream_files(
            files,
            file_format,
            features=features,
            columns=columns,
            filters=filters,
            options=options,
            storage_options=storage_options,
            split=name,
            fingerprint=fingerprint,
        )

    streams = {name: one(name) for name in wanted}
    return streams[split] if split is not None else IterableDatasetDict(streams)
