"""Transforms of columns: rename, remove, select, add and cast."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._results import derived, plan, table_result
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
    return derived(dataset, transform, dataset.data.rename_columns(names), features)


def remove_columns(dataset: Dataset, names: Sequence[str], new_fingerprint: str | None) -> Dataset:
    """Drop columns; zero-copy."""
    dataset._require_columns(names, "remove_columns")  # pyright: ignore[reportPrivateUsage]
    transform = plan(dataset, "remove_columns", {"column_names": sorted(names)}, new_fingerprint)
    features = Features({k: v for k, v in dataset.features.items() if k not in names})
    return derived(dataset, transform, dataset.data.drop_columns(list(names)), features)


def select_columns(dataset: Dataset, names: Sequence[str], new_fingerprint: str | None) -> Dataset:
    """Keep only ``names``, in that order; zero-copy."""
    dataset._require_columns(names, "select_columns")  # pyright: ignore[reportPrivateUsage]
    transform = plan(dataset, "select_columns", {"column_names": list(names)}, new_fingerprint)
    features = Features({name: dataset.features[name] for name in names})
    return derived(dataset, transform, dataset.data.select(list(names)), features)


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
    table = source.data.append_column(name, array)
    features = Features({**source.features, name: feature}) if feature is not None else None
    if features is not None:
        table = cast_table(table, features)
    return derived(source, transform, table, features or Features.from_arrow_schema(table.schema))


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

    def write(sink: TableSink) -> None:
        wrote = False
        for table in dataset._iter_tables(_CAST_BATCH):  # pyright: ignore[reportPrivateUsage]
            sink.write(cast_table(table, features))
            wrote = True
        if not wrote:
            sink.write(features.arrow_schema.empty_table())

    return table_result(
        dataset,
        transform,
        write,
        lambda _schema: features,
        load_from_cache_file=load_from_cache_file,
    )
