"""Arrow IPC files: the stream format (the anchor's ``.arrow`` files) and the file format."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.ipc as ipc

from dagster_ds.errors import MalformedFileError
from dagster_ds.formats._batches import (
    DEFAULT_BATCH_SIZE,
    Filters,
    ReadStats,
    check_positions,
    finish,
    to_expression,
)
from dagster_ds.formats._file import ResolvedFile, file_url
from dagster_ds.formats._infer import infer_compression
from dagster_ds.formats._io import is_local, open_input, url_to_fs
from dagster_ds.formats._sink import BatchWriter

_FILE_MAGIC = b"ARROW1"


def iter_arrow_batches(
    file: ResolvedFile | str | os.PathLike[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    start_row: int = 0,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    stats: ReadStats | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Stream the record batches of an Arrow IPC file, stream or file format alike.

    Local files are memory-mapped, so batches are zero-copy and skipping to
    ``start_row`` costs no decoding.

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        batch_size: Most rows in a batch.
        start_row: Rows to skip (resume).
        columns: Columns to keep, in this order.
        filters: Rows to keep, DNF tuples or a ``pyarrow.compute.Expression``.
        stats: Updated with the rows read.
        storage_options: Passed to the fsspec filesystem.

    Returns:
        An iterator of record batches.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/data-00000-of-00001.arrow"
        >>> write_batches([pa.table({"id": list(range(1000))})], path)
        1000
        >>> [b.num_rows for b in iter_arrow_batches(path, batch_size=400, start_row=100)]
        [400, 400, 100]
    """
    check_positions(batch_size, start_row)
    url = file_url(file)
    expression = to_expression(filters)
    raw = _read(url, storage_options, stats)
    return finish(
        raw,
        source=url,
        batch_size=batch_size,
        skip=start_row,
        columns=columns,
        expression=expression,
        stats=stats,
    )


def _read(
    url: str, storage_options: Mapping[str, Any] | None, stats: ReadStats | None
) -> Iterator[pa.RecordBatch]:
    if infer_compression(url) is not None:
        with open_input(url, storage_options) as stream:
            yield from _batches(url, stream, stats, seekable=False)
        return
    fs, path = url_to_fs(url, storage_options)
    source: Any = pa.memory_map(path) if is_local(fs) else fs.open(path, "rb")
    with source:
        yield from _batches(url, source, stats, seekable=True)


def _batches(
    url: str, source: Any, stats: ReadStats | None, *, seekable: bool
) -> Iterator[pa.RecordBatch]:
    try:
        if seekable and source.read(len(_FILE_MAGIC)) == _FILE_MAGIC:
            source.seek(0)
            reader = ipc.open_file(source)
            batches: Iterator[pa.RecordBatch] = (
                reader.get_batch(i) for i in range(reader.num_record_batches)
            )
        else:
            if seekable:
                source.seek(0)
            reader = ipc.open_stream(source)
            batches = iter(reader)
        yield pa.RecordBatch.from_pylist([], schema=reader.schema)
        for batch in batches:
            if stats is not None:
                stats.rows_read += batch.num_rows
            yield batch
    except pa.ArrowInvalid as error:
        raise MalformedFileError(
            f"{url!r} is not a valid Arrow IPC file or stream: {error}. Check the file, or "
            "pass the right format=.",
            path=url,
        ) from error


class ArrowIpcWriter(BatchWriter):
    """Writes batches as an Arrow IPC stream (the anchor's ``.arrow``) or IPC file.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/data.arrow"
        >>> with ArrowIpcWriter(path) as writer:
        ...     writer.write(pa.record_batch({"id": [1, 2]}))
        >>> next(iter_arrow_batches(path)).to_pylist()
        [{'id': 1}, {'id': 2}]
    """

    format = "arrow"
    _stream_compression = False

    def __init__(
        self,
        url: str | os.PathLike[str] | BinaryIO,
        *,
        schema: pa.Schema | None = None,
        storage_options: Mapping[str, Any] | None = None,
        file_format: bool = False,
    ) -> None:
        """Open the file.

        Args:
            url: Target path or fsspec URL, or a file object opened in binary mode.
            schema: Schema of the file (default: the first batch's).
            storage_options: Passed to the fsspec filesystem.
            file_format: Write the IPC file format (with a footer for random access)
                instead of the stream format.
        """
        self._file_format = file_format
        self._writer: ipc.RecordBatchStreamWriter | ipc.RecordBatchFileWriter | None = None
        super().__init__(url, schema=schema, storage_options=storage_options)

    def _start(self, schema: pa.Schema) -> None:
        opener = ipc.new_file if self._file_format else ipc.new_stream
        self._writer = opener(self._file, schema)

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        assert self._writer is not None
        self._writer.write_batch(batch)

    def _finish(self) -> None:
        assert self._writer is not None
        self._writer.close()

    def _abandon(self) -> None:
        if self._writer is not None:
            self._writer.close()
