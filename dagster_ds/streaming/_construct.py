"""Sources of IterableDatasets: data files, and the rows of a map-style dataset."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from dagster_ds.errors import InvalidArgumentError
from dagster_ds.features import Features
from dagster_ds.formats import Filters, ResolvedFile
from dagster_ds.formatting import Formatter
from dagster_ds.streaming._dataset import IterableDataset
from dagster_ds.streaming._node import shard_indices
from dagster_ds.streaming._shards import FileShard, TableShard
from dagster_ds.streaming._source import ShardSource


def stream_files(
    files: Sequence[ResolvedFile],
    file_format: str,
    *,
    features: Features | None,
    columns: Sequence[str] | None,
    filters: Filters | None,
    options: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None,
    split: str | None,
    fingerprint: Callable[[], str],
) -> IterableDataset:
    """A stream of data files, one shard per file (`reshard` splits Parquet by row group)."""
    shards = tuple(
        FileShard(
            file,
            file_format,
            columns=tuple(columns) if columns is not None else None,
            filters=filters,
            features=features,
            storage_options=storage_options,
            options=dict(options),
        )
        for file in files
    )
    schema = features.arrow_schema if features is not None else None
    return IterableDataset(
        ShardSource(shards, schema), features=features, split=split, fingerprint=fingerprint
    )


def stream_table(
    table: pa.Table,
    indices: Any,
    *,
    features: Features,
    num_shards: int,
    split: str | None,
    fingerprint: str,
    format_type: str | None,
) -> IterableDataset:
    """A stream of a table's rows (through ``indices`` when given) in contiguous shards.

    Without indices, every batch is a zero-copy slice of the table.
    """
    rows: int = len(indices) if indices is not None else table.num_rows
    if num_shards < 1:
        raise InvalidArgumentError(
            f"to_iterable_dataset: num_shards must be at least 1, got {num_shards!r}."
        )
    if num_shards > max(rows, 1):
        raise InvalidArgumentError(
            f"to_iterable_dataset: num_shards={num_shards} is more than the dataset's {rows} "
            "rows; use at most one shard per row."
        )
    shards: list[TableShard] = []
    for index in range(num_shards):
        kept = shard_indices(rows, num_shards, index, True)
        start = kept[0] if kept else 0
        stop = kept[-1] + 1 if kept else 0
        shards.append(TableShard(table, start, stop, indices))
    node = ShardSource(tuple(shards), features.arrow_schema)
    return IterableDataset(
        node,
        features=features,
        formatter=Formatter.create(format_type),
        split=split,
        fingerprint=fingerprint,
    )
