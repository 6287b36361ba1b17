"""Map-style datasets from data files: a shard per group of files, cached by their content.

What `load_dataset` does for each split of local or remote files, and what the
file constructors (`Dataset.from_csv`, ...) do for theirs. Small files are read
into shards of about ``shard_bytes`` source bytes each, a big file into its
own (`dagster_ds.arrow._groups`); a shard's fingerprint is made of its files'.
An appended file joins the last group, whose other files were the last group
stored before: their rows are read from that entry, and only the new file is read.
A split's fingerprint is made of its files' (`split_fingerprint`), the same
streamed or not and however the files are grouped, so `dagster_ds.load` uses it
for streams too.

Each shard's entry records its columns' content fingerprints
(``column_fingerprints``), computed as the files are first read into it: a
later process checking which columns changed (reuse by read columns, column
words) takes them from the entry instead of hashing the columns again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._column_reads import FingerprintingSink
from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._groups import (
    DEFAULT_SHARD_BYTES,
    file_groups,
    group_transform,
    shard_bytes_of,
)
from dagster_ds.arrow._memory import release_unused
from dagster_ds.arrow._results import Transform, lookup_table_shard, shard_table, shards_result
from dagster_ds.arrow._shards import Shard, shards_fingerprint
from dagster_ds.cache import CacheStore
from dagster_ds.errors import CacheError, FormatOptionError
from dagster_ds.features import Features, cast_table
from dagster_ds.fingerprint import HashNode, fingerprint_transform, replace_arguments
from dagster_ds.formats import (
    DEFAULT_MAX_DEPTH,
    Filters,
    ResolvedFile,
    fingerprint_each_file,
    infer_format,
    resolve_data_files,
)
from dagster_ds.progress import progress_bar

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_ROOT = "0" * 32


def dataset_from_files(
    cls: type[Dataset],
    kind: str,
    files: str | Sequence[str],
    split: str,
    features: Features | None,
    *,
    storage_options: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    shard_bytes: int | str | None = DEFAULT_SHARD_BYTES,
    **reader_options: Any,
) -> Dataset:
    """The split ``split`` of the ``kind`` files ``files`` (paths, globs or URLs), a ``cls``.

    ``shard_bytes``: as in `load_dataset`.
    """
    grouping = shard_bytes_of(shard_bytes)
    resolved = resolve_data_files({split: files}, storage_options=storage_options)
    return load_split(
        split,
        resolved[split],
        kind,
        features,
        columns,
        filters,
        reader_options,
        storage_options,
        cls=cls,
        shard_bytes=grouping,
    )


def load_split(
    split: str,
    files: list[ResolvedFile],
    fmt: str | None,
    features: Features | None,
    columns: Sequence[str] | None,
    filters: Filters | None,
    options: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None,
    origin: Mapping[str, Any] | None = None,
    *,
    cls: type[Dataset],
    shard_bytes: int = DEFAULT_SHARD_BYTES,
) -> Dataset:
    """One split, a shard per group of files, each cached under its files' fingerprints.

    Consecutive files smaller than ``shard_bytes`` share a shard of about that
    many source bytes (0: a shard per file); see `dagster_ds.arrow._groups`.
    The split is a ``cls``: `Dataset`, which the engine is below and does not import.
    """
    _check_cache_holds(options)
    file_format = fmt or infer_format([file.url for file in files])
    transforms = file_transforms(
        files, file_format, features, columns, filters, options, storage_options, origin
    )

    def features_for(schema: pa.Schema) -> Features:
        return features if features is not None else Features.from_arrow_schema(schema)

    def reader(
        group: Sequence[ResolvedFile], head: Transform | None
    ) -> Callable[[TableSink], dict[str, Any]]:
        def write(table_sink: TableSink) -> dict[str, Any]:
            from dagster_ds.formats import iter_batches  # the readers: only to read files

            sink = FingerprintingSink(table_sink)
            for file in group[-1:] if _stored_head(store, head, sink) else group:
                for batch in iter_batches(
                    file,
                    file_format,
                    columns=columns,
                    filters=filters,
                    storage_options=storage_options,
                    **options,
                ):
                    sink.write(cast_table(batch, features) if features is not None else batch)
            if sink.num_rows == 0 and features is not None:
                sink.write(features.arrow_schema.empty_table())
            return {"column_fingerprints": sink.digests.hexdigests()}

        return write

    groups = file_groups(
        [transform.fingerprint for transform in transforms],
        [file.size for file in files],
        shard_bytes,
    )
    shards: list[tuple[Shard, Features]] = []
    store = CacheStore()
    with progress_bar(sum(file.size for file in files), f"Loading {split}", unit="B") as bar:
        for position, group in enumerate(groups):
            members = files[group.start : group.stop]
            names = [file.url for file in members]
            transform = group_transform(transforms[group.start : group.stop], names)
            # An append joins the last group: its other files are the last group stored before.
            head = None
            if position + 1 == len(groups) and len(group) > 1:
                head = group_transform(transforms[group.start : group.stop - 1], names[:-1])
            write = reader(members, head if head is not None and head.reusable else None)
            shards.append(shard_table(transform, write, features_for, store=store))
            release_unused()  # what reading and writing the group's rows took
            bar.update(sum(file.size for file in members))
    fingerprint = split_fingerprint(transforms)
    dataset = shards_result(
        None, Transform("load_dataset", (), fingerprint, None), shards, features=features, cls=cls
    )
    dataset._split = split  # pyright: ignore[reportPrivateUsage]
    return dataset


def _stored_head(
    store: CacheStore, head: Transform | None, sink: TableSink | FingerprintingSink
) -> bool:
    """Write the rows of a group's files but its last (``head``'s load), if stored; whether.

    The group was the last one before a file was appended to the split: its
    entry holds those files' rows (their fingerprints say they are unchanged),
    so they are not read again. False (nothing written) if it is not stored or
    cannot be read: the files are read then.
    """
    if head is None:
        return False
    shard = lookup_table_shard(store, head.fingerprint)
    if shard is None:
        return False
    try:
        with shard.opened_for_now():
            table = shard.table  # read whole before anything is written
            sink.write(table)
    except CacheError:
        return False
    finally:
        for entry in shard.entries:
            entry.close()
    return True


def file_transforms(
    files: list[ResolvedFile],
    file_format: str,
    features: Features | None,
    columns: Sequence[str] | None,
    filters: Filters | None,
    options: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None,
    origin: Mapping[str, Any] | None = None,
) -> list[Transform]:
    """Each file's load: its fingerprint is that of the file's content and the reading options."""
    transforms: list[Transform] = []
    tree: HashNode | None = None
    sources = fingerprint_each_file(
        files,
        storage_options=storage_options,
        state_dir=CacheStore().state_dir,  # what local files hashed to, shared by processes
    )
    for source in sources:
        if tree is None:  # the first file, or unhashable options: hash every argument
            args = _load_args(source, file_format, features, columns, filters, options, origin)
            fingerprint, tree = fingerprint_transform(_ROOT, "load_dataset", args)
        else:  # the same options: hash only the file
            tree = replace_arguments(tree, {"source": source})
            fingerprint = tree.digest
        transforms.append(Transform("load_dataset", (), fingerprint, tree))
    return transforms


def split_fingerprint(transforms: Sequence[Transform]) -> str:
    return shards_fingerprint([transform.fingerprint for transform in transforms])


def _load_args(
    source: str,
    file_format: str,
    features: Features | None,
    columns: Sequence[str] | None,
    filters: Filters | None,
    options: Mapping[str, Any],
    origin: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What a loaded file's fingerprint is made of (the same streamed or not).

    ``source``: the file's own fingerprint (`fingerprint_each_file`).
    """
    args: dict[str, Any] = {
        "format": file_format,
        "source": source,
        "features": features.to_dict() if features is not None else None,
        "columns": list(columns) if columns is not None else None,
        "filters": filters,
        "options": {key: value for key, value in options.items() if key != "stats"},
    }
    if origin is not None:
        args["origin"] = dict(origin)
    return args


def _check_cache_holds(reader_options: Mapping[str, Any]) -> None:
    """Refuse a JSON ``max_depth=`` deeper than a map-style dataset's cache holds."""
    depth = reader_options.get("max_depth")
    if isinstance(depth, int) and depth > DEFAULT_MAX_DEPTH:
        raise FormatOptionError(
            f"max_depth={depth!r} reads values nested deeper than the cache of a map-style "
            f"dataset holds (Arrow IPC files: {DEFAULT_MAX_DEPTH} levels). Load with "
            "streaming=True to read them, or keep max_depth at most "
            f"{DEFAULT_MAX_DEPTH}."
        )
