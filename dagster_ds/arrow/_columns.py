"""Transforms of columns: rename, remove, select, add and cast."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._column_lineage import (
    added_column_sources,
    record,
    renamed_column_sources,
    same_column_sources,
)
from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._parallel import WriteFactory, run_shards
from dagster_ds.arrow._results import derived, plan, shards_result, units
from dagster_ds.arrow._shards import Shard
from dagster_ds.errors import DuplicateColumnError, InvalidArgumentError
from dagster_ds.features import Features, FeatureType, cast_table

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_CAST_BATCH = 10_000


def rename_columns(
    dataset: Dataset, mapping: Mapping[str, str], new_fingerprint: str | None
) -> Dataset:
    """Rename columns; a zero-copy change of the schema."""
    dataset._require_columns(mapping, "rename_columns")  # pyright: ignore[reportPrivateUsage]
    names = [mapping.get(name, name) for name in dataset.column_names]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise DuplicateColumnError(
            f"rename_columns({dict(mapping)!r}) would give several columns the name(s) "
            f"{duplicates}; choose names not already in {dataset.column_names}."
        )
    transform = plan(dataset, "rename_columns", {"column_mapping": dict(mapping)}, new_fingerprint)
    features = Features({mapping.get(k, k): v for k, v in dataset.features.items()})

    def rename(table: pa.Table) -> pa.Table:
        return table.rename_columns([mapping.get(name, name) for name in table.column_names])

    renamed = derived(dataset, transform, rename, features)
    return record(renamed, dataset, renamed_column_sources(dataset.column_names, mapping))


def remove_columns(dataset: Dataset, names: Sequence[str], new_fingerprint: str | None) -> Dataset:
    """Drop columns; zero-copy."""
    dataset._require_columns(names, "remove_columns")  # pyright: ignore[reportPrivateUsage]
    transform = plan(dataset, "remove_columns", {"column_names": sorted(names)}, new_fingerprint)
    features = Features({k: v for k, v in dataset.features.items() if k not in names})
    kept = derived(dataset, transform, lambda table: table.drop_columns(list(names)), features)
    return record(kept, dataset, same_column_sources(list(features)))


def select_columns(dataset: Dataset, names: Sequence[str], new_fingerprint: str | None) -> Dataset:
    """Keep only ``names``, in that order; zero-copy."""
    dataset._require_columns(names, "select_columns")  # pyright: ignore[reportPrivateUsage]
    transform = plan(dataset, "select_columns", {"column_names": list(names)}, new_fingerprint)
    features = Features({name: dataset.features[name] for name in names})
    kept = derived(dataset, transform, lambda table: table.select(list(names)), features)
    return record(kept, dataset, same_column_sources(names))


def add_column(
    dataset: Dataset,
    name: str,
    column: Sequence[Any] | pa.Array,
    feature: FeatureType | None,
    new_fingerprint: str | None,
) -> Dataset:
    """Append a column with one value per row (the indices mapping is flattened first)."""
    if name in dataset.column_names:
        raise DuplicateColumnError(
            f"add_column: the dataset already has a column {name!r}; rename or remove it first."
        )
    if len(column) != len(dataset):
        raise InvalidArgumentError(
            f"add_column({name!r}): got {len(column)} values for a dataset of {len(dataset)} rows."
        )
    source = dataset.flatten_indices() if dataset._indices is not None else dataset  # pyright: ignore[reportPrivateUsage]
    array = column if isinstance(column, pa.Array | pa.ChunkedArray) else pa.array(list(column))
    transform = plan(
        source, "add_column", {"name": name, "column": array, "feature": feature}, new_fingerprint
    )
    features = Features({**source.features, name: feature}) if feature is not None else None
    shards: list[tuple[Shard, Features]] = []
    for shard, start in units(source):
        table = shard.table.append_column(name, array.slice(start, shard.num_rows))
        if features is not None:
            table = cast_table(table, features)
        fingerprint = transform.for_shard(shard.fingerprint, offset=start).fingerprint
        shard_features = features or Features.from_arrow_schema(table.schema)
        shards.append((Shard(fingerprint, table, None, shard.entries), shard_features))
    added = shards_result(source, transform, shards, features=features)
    return record(added, source, added_column_sources(source.column_names, name))


def flatten_shards(dataset: Dataset, new_fingerprint: str | None) -> Dataset:
    """Copy the rows each shard (or the mapping) points at into tables of their own."""
    transform = plan(dataset, "flatten_indices", {}, new_fingerprint)
    features = dataset.features

    pieces = [
        (shard, start, transform.for_shard(shard.fingerprint)) for shard, start in units(dataset)
    ]
    shards = run_shards(
        pieces,
        _copying(lambda table: table),
        lambda _schema: features,
        workers=1,
        load_from_cache_file=True,
    )
    result = shards_result(dataset, transform, shards, features=features)
    result._output_format = dataset._output_format  # pyright: ignore[reportPrivateUsage]
    return record(result, dataset, same_column_sources(dataset.column_names))


def cast_dataset(
    dataset: Dataset, features: Features, load_from_cache_file: bool, new_fingerprint: str | None
) -> Dataset:
    """Cast every column to ``features``, with checks, batch by batch into the cache."""
    if set(features) != set(dataset.column_names):
        missing = sorted(set(dataset.column_names) - set(features))
        extra = sorted(set(features) - set(dataset.column_names))
        raise InvalidArgumentError(
            f"cast: the features must name exactly the dataset's columns; missing {missing}, "
            f"unknown {extra}. Use cast_column to change one column."
        )
    transform = plan(dataset, "cast", {"features": features.to_dict()}, new_fingerprint)

    pieces = [
        (shard, start, transform.for_shard(shard.fingerprint)) for shard, start in units(dataset)
    ]
    shards = run_shards(
        pieces,
        _copying(lambda table: cast_table(table, features)),
        lambda _schema: features,
        workers=1,
        load_from_cache_file=load_from_cache_file,
    )
    cast = shards_result(dataset, transform, shards, features=features)
    return record(cast, dataset, same_column_sources(dataset.column_names))


def _copying(change: Callable[[pa.Table], pa.Table]) -> WriteFactory:
    """Writes each shard's rows, changed by ``change``, batch by batch."""

    def make_write(shard: Shard, start: int, workers: int) -> Callable[[TableSink], None]:
        del start, workers

        def write(sink: TableSink) -> None:
            for offset in range(0, shard.num_rows, _CAST_BATCH):
                sink.write(change(shard.read(offset, offset + _CAST_BATCH)))
            if sink.num_rows == 0:
                sink.write(change(shard.table.schema.empty_table()))

        return write

    return make_write
