"""Exports: a stream written batch by batch (bounded memory) to one file or one per shard.

With a `DaskExecutor` current, each file of a sharded export is one task on
its cluster (the same writer, so the same bytes); otherwise they are written
here, one after the other.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import pyarrow as pa

from dagster_ds.errors import InvalidArgumentError
from dagster_ds.formats import is_file_object, open_writer
from dagster_ds.parallel import Sealed, remote_executor, run_sealed

if TYPE_CHECKING:
    from dagster_ds.streaming._dataset import IterableDataset

# Parquet row groups are written once this much data is pending: the writer's memory.
ROW_GROUP_BYTES = 4 << 20


def export(
    dataset: IterableDataset,
    format: str,
    path: str | os.PathLike[str] | BinaryIO,
    *,
    batch_size: int | None,
    storage_options: Mapping[str, Any] | None,
    num_shards: int | None,
    options: Mapping[str, Any],
) -> int:
    """Write ``dataset`` as ``format``; return the bytes written (all files together)."""
    if format == "parquet" and "row_group_size" not in options:
        options = {"max_row_group_bytes": ROW_GROUP_BYTES, **options}
    if num_shards is None:
        return _write(dataset, format, path, batch_size, storage_options, options)
    if is_file_object(path):
        raise InvalidArgumentError(
            f"to_{format}(num_shards={num_shards!r}) writes one file per shard, so it needs a "
            f"path with an '{{index}}' placeholder, not the file object {path!r}."
        )
    target = os.fspath(cast("str | os.PathLike[str]", path))
    if num_shards < 1 or "{index" not in target:
        raise InvalidArgumentError(
            f"to_{format}(num_shards={num_shards!r}): writing one file per shard needs "
            f"num_shards >= 1 and a path with an '{{index}}' placeholder, got {target!r}; "
            "e.g. 'out/train-{index:05d}-of-{num_shards:05d}.parquet'."
        )
    files = [
        _File(
            dataset.shard(num_shards, index, contiguous=True),
            format,
            target.format(index=index, num_shards=num_shards),
            batch_size,
            storage_options,
            options,
        )
        for index in range(num_shards)
    ]
    executor = remote_executor()
    if executor is None:
        return sum(file.write() for file in files)
    executor.check_reach(f"to_{format} target", target)
    # One task per file on the cluster: each writes its file atomically, as here.
    calls = [Sealed.of(f"the file {file.url!r}", _File.write, file) for file in files]
    return sum(executor.run_calls(run_sealed, calls, what=lambda call: call.label))


@dataclass(frozen=True)
class _File:
    """One output file of a sharded export: what a worker writes."""

    dataset: IterableDataset
    format: str
    url: str
    batch_size: int | None
    storage_options: Mapping[str, Any] | None
    options: Mapping[str, Any]

    def write(self) -> int:
        return _write(
            self.dataset, self.format, self.url, self.batch_size, self.storage_options, self.options
        )


def _write(
    dataset: IterableDataset,
    format: str,
    url: str | os.PathLike[str] | BinaryIO,
    batch_size: int | None,
    storage_options: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> int:
    features = dataset.features
    schema = features.arrow_schema if features is not None else None
    with open_writer(
        url, format, schema=schema, storage_options=storage_options, **options
    ) as writer:
        for batch in _batches(dataset, batch_size):
            writer.write(batch)
    return writer.bytes_written


def _batches(dataset: IterableDataset, batch_size: int | None) -> Iterator[pa.RecordBatch]:
    arrow = dataset.with_format("arrow")
    if batch_size is None:
        yield from arrow._record_batches()  # pyright: ignore[reportPrivateUsage]
        return
    for table in arrow.iter(batch_size=batch_size):
        yield from table.to_batches()
