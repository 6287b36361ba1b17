"""Streaming assets: an IterableDataset written into the store in bounded memory."""

from __future__ import annotations

import pyarrow as pa

from dagster_ds.arrow import Dataset, TableSink, Transform, shard_table, shards_result
from dagster_ds.cache import CacheStore
from dagster_ds.features import Features
from dagster_ds.fingerprint import HashNode
from dagster_ds.streaming import IterableDataset

_BATCH_ROWS = 10_000
STREAM_FLAG = "streaming"


def stream_to_dataset(dataset: IterableDataset, store: CacheStore) -> Dataset:
    """Write ``dataset`` batch by batch as one table entry of ``store``; that entry's dataset.

    The entry is keyed by the stream's fingerprint, so an unchanged stream is
    written once.
    """
    declared = dataset.features

    def write(sink: TableSink) -> None:
        schema: pa.Schema | None = declared.arrow_schema if declared is not None else None
        for table in dataset.with_format("arrow").iter(batch_size=_BATCH_ROWS):
            schema = schema or table.schema
            sink.write(table if table.schema == schema else table.cast(schema))
        if sink.num_rows == 0:
            sink.write((schema or pa.schema([])).empty_table())

    def features_for(schema: pa.Schema) -> Features:
        return declared or Features.from_arrow_schema(schema)

    fingerprint = dataset.fingerprint
    transform = Transform("stream", (), fingerprint, HashNode("stream", "stream", fingerprint))
    shard = shard_table(transform, write, features_for, store=store)
    result = shards_result(None, transform, [shard], features=shard[1], cls=Dataset)
    result._split = dataset.split  # pyright: ignore[reportPrivateUsage]
    result._lineage = dataset.lineage  # pyright: ignore[reportPrivateUsage]
    return result


def as_stream(dataset: Dataset) -> IterableDataset:
    """A stored dataset streamed back (zero-copy slices), with its fingerprint."""
    from dagster_ds.streaming import stream_table

    return stream_table(
        dataset.data,
        dataset._indices,  # pyright: ignore[reportPrivateUsage]
        features=dataset.features,
        num_shards=1,
        split=dataset.split,
        fingerprint=dataset.fingerprint,
        format_type=None,
    )


def relabel_stream(dataset: IterableDataset, fingerprint: str) -> IterableDataset:
    """The same lazy pipeline, under the asset's fingerprint."""
    return IterableDataset(
        dataset._node,  # pyright: ignore[reportPrivateUsage]
        features=dataset._declared,  # pyright: ignore[reportPrivateUsage]
        formatter=dataset._formatter,  # pyright: ignore[reportPrivateUsage]
        split=dataset.split,
        fingerprint=fingerprint,
    )
