"""Output shards: which source shards feed which Parquet files, and writing them.

A pushed split is read as ``num_sources`` source shards (a map-style dataset's
contiguous row ranges, a streaming dataset's shards) and written as
``num_shards`` files, as the anchor does:

- at most one output per source: output ``i`` is the contiguous group of sources
  ``split_evenly(num_sources, num_shards, i)``;
- more outputs than sources: source ``s`` is spread over the consecutive outputs
  ``split_evenly(num_shards, num_sources, s)``, row ``r`` of the source going to
  the ``r % k``-th of its ``k`` outputs (round robin, one pass); an output that
  gets no row is a valid 0-row file.

Each `ShardJob` reads its sources once and writes its outputs with bounded
memory (one batch, plus at most ``buffer_bytes`` of pending row groups).

Files are written with Parquet's content-defined chunking where the installed
pyarrow has it (`CONTENT_DEFINED_CHUNKING`): data pages are cut where the
values say, not every so many bytes, so a version that inserts or changes a
few rows shares most of its pages, byte for byte, with the one before, and
the Hub's Xet storage uploads and stores only the pages that changed.
"""

from __future__ import annotations

import inspect
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dagster_ds.features import embed_files
from dagster_ds.formats import BatchWriter, open_writer

SourceReader = Callable[[int], Iterable[pa.Table | pa.RecordBatch]]

DEFAULT_BUFFER_BYTES = 64 << 20

#: ``pyarrow.parquet.ParquetWriter`` options for content-defined chunking (pyarrow >= 21),
#: empty where the installed pyarrow does not have it.
CONTENT_DEFINED_CHUNKING: dict[str, Any] = (
    {"use_content_defined_chunking": True}
    if "use_content_defined_chunking" in inspect.signature(pq.ParquetWriter).parameters
    else {}
)


def split_evenly(total: int, num_parts: int, part: int) -> tuple[int, int]:
    """The ``[start, end)`` of ``part`` of ``range(total)`` cut into ``num_parts`` even parts.

    Part sizes differ by at most one, the larger parts first.

    Example:
        >>> [split_evenly(5, 2, part) for part in range(2)]
        [(0, 3), (3, 5)]
    """
    div, mod = divmod(total, num_parts)
    start = div * part + min(part, mod)
    return start, start + div + (1 if part < mod else 0)


def shard_runs(mapping: pa.Array, starts: Sequence[int]) -> list[tuple[int, int, int]] | None:
    """The rows of an indices mapping grouped by the shard they come from, if in shard order.

    ``starts`` is each shard's first row in the shards' concatenation, and the
    total last. Each run is ``(shard, start, stop)``: rows ``[start, stop)`` of
    the mapped dataset all come from ``shard``. None when the mapping goes back
    to an earlier shard (a shuffle, a sort): no run per shard keeps the order.

    Example:
        >>> shard_runs(pa.array([0, 2, 3, 5]), [0, 3, 6])
        [(0, 0, 2), (1, 2, 4)]
        >>> shard_runs(pa.array([4, 0]), [0, 3, 6]) is None
        True
    """
    import numpy as np

    rows = mapping.to_numpy(zero_copy_only=False)
    shard = np.searchsorted(np.asarray(starts[1:], dtype=np.int64), rows, side="right")
    if len(shard) and np.any(shard[1:] < shard[:-1]):
        return None
    cuts = [0, *(np.flatnonzero(shard[1:] != shard[:-1]) + 1).tolist(), len(shard)]
    return [(int(shard[low]), low, high) for low, high in itertools.pairwise(cuts) if high > low]


@dataclass(frozen=True)
class ShardJob:
    """A unit of work: read ``sources`` in order, write the output shards ``outputs``."""

    sources: tuple[int, ...]
    outputs: tuple[int, ...]


def plan_jobs(num_sources: int, num_shards: int) -> list[ShardJob]:
    """The jobs that turn ``num_sources`` source shards into ``num_shards`` output files.

    Example:
        >>> plan_jobs(2, 5)
        [ShardJob(sources=(0,), outputs=(0, 1, 2)), ShardJob(sources=(1,), outputs=(3, 4))]
    """
    if num_shards <= num_sources:
        return [
            ShardJob(tuple(range(*split_evenly(num_sources, num_shards, i))), (i,))
            for i in range(num_shards)
        ]
    if num_sources == 0:
        return [ShardJob((), (i,)) for i in range(num_shards)]
    return [
        ShardJob((s,), tuple(range(*split_evenly(num_shards, num_sources, s))))
        for s in range(num_sources)
    ]


@dataclass(frozen=True)
class WrittenShard:
    """One output shard written to a local temporary file.

    Attributes:
        index: The output shard's index.
        path: The local file.
        num_rows: Rows in the file.
        num_bytes: Uncompressed size of its data (the row groups' total byte size).
        size: The file's size in bytes.
        key: The `content_key` of the file, where its name is made from it.
    """

    index: int
    path: str
    num_rows: int
    num_bytes: int
    size: int
    key: str | None = None


def write_job(
    job: ShardJob,
    read_source: SourceReader,
    schema: pa.Schema,
    folder: str,
    *,
    file_name: Callable[[int], str] = "shard-{:05d}.parquet".format,
    buffer_bytes: int = DEFAULT_BUFFER_BYTES,
) -> list[WrittenShard]:
    """Write ``job``'s output shards as Parquet files in ``folder``; return them in order.

    ``file_name(index)`` names output shard ``index``'s file.
    """
    paths = [os.path.join(folder, file_name(index)) for index in job.outputs]
    per_writer = max(buffer_bytes // len(paths), 1 << 20)
    writers: list[BatchWriter] = []
    try:
        writers.extend(
            open_writer(
                path,
                "parquet",
                schema=schema,
                max_row_group_bytes=per_writer,
                **CONTENT_DEFINED_CHUNKING,
            )
            for path in paths
        )
        tables = (table for source in job.sources for table in read_source(source))
        _fill(writers, map(embed_files, tables))  # image and audio files go inside
        for writer in writers:
            writer.close()
    except BaseException:
        for writer in writers:
            writer.abort()
        for path in paths:
            if os.path.exists(path):
                os.remove(path)
        raise
    return [_describe(index, path) for index, path in zip(job.outputs, paths, strict=True)]


def _fill(writers: list[BatchWriter], tables: Iterator[pa.Table | pa.RecordBatch]) -> None:
    """Send rows to ``writers`` in turn: row ``r`` of the stream to writer ``r % k``."""
    k = len(writers)
    seen = 0
    for table in tables:
        n = table.num_rows
        if k == 1:
            writers[0].write(table)
        else:
            for position, writer in enumerate(writers):
                first = (position - seen) % k
                if first < n:
                    writer.write(table.take(pa.array(range(first, n, k), pa.int64())))
        seen += n


def _describe(index: int, path: str) -> WrittenShard:
    metadata = pq.read_metadata(path)
    num_bytes = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    return WrittenShard(index, path, metadata.num_rows, num_bytes, os.path.getsize(path))
