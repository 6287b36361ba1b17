"""Parquet writing: row groups of a set size, pages with checksums."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from dagster_ds.errors import FormatOptionError, UnsupportedTypeError
from dagster_ds.formats._sink import BatchWriter

DEFAULT_MAX_ROW_GROUP_BYTES = 100 << 20  # as the anchor's to_parquet
# The deepest schema Arrow's Parquet reader opens (a list or map counts 2 levels, a
# struct 1, the root and each value 1): a deeper file would be written, then refused.
MAX_SCHEMA_DEPTH = 100


class ParquetWriter(BatchWriter):
    """Writes batches to a Parquet file, one row group at a time.

    Rows are buffered until ``row_group_size`` rows (or ``max_row_group_bytes`` of
    data) are pending, then written as one row group, so memory stays bounded by one
    row group and every row group but the last has exactly ``row_group_size`` rows.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/out.parquet"
        >>> with ParquetWriter(path, row_group_size=100) as writer:
        ...     writer.write(pa.table({"id": list(range(150))}))
        ...     writer.write(pa.table({"id": list(range(150, 250))}))
        >>> [group.num_rows for group in list_row_groups(path)]
        [100, 100, 50]
    """

    format = "parquet"
    _stream_compression = False

    def __init__(
        self,
        url: str | os.PathLike[str] | BinaryIO,
        *,
        schema: pa.Schema | None = None,
        storage_options: Mapping[str, Any] | None = None,
        row_group_size: int | None = None,
        max_row_group_bytes: int = DEFAULT_MAX_ROW_GROUP_BYTES,
        compression: str = "snappy",
        **parquet_options: Any,
    ) -> None:
        """Open the file.

        Args:
            url: Target path or fsspec URL, or a file object opened in binary mode.
            schema: Schema of the file (default: the first batch's).
            storage_options: Passed to the fsspec filesystem.
            row_group_size: Rows per row group (default: by size, see below).
            max_row_group_bytes: A row group is written once this much data is pending.
            compression: Parquet column compression codec.
            **parquet_options: Passed on to ``pyarrow.parquet.ParquetWriter``.
        """
        if row_group_size is not None and row_group_size < 1:
            raise FormatOptionError(f"row_group_size must be positive, got {row_group_size!r}.")
        self._row_group_size = row_group_size
        self._max_bytes = max_row_group_bytes
        self._options = {"compression": compression, "write_page_checksum": True, **parquet_options}
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self._writer: pq.ParquetWriter | None = None
        super().__init__(url, schema=schema, storage_options=storage_options)

    def _check_schema(self, schema: pa.Schema) -> None:
        for field in schema:
            depth = 1 + _depth(field.type)
            if depth > MAX_SCHEMA_DEPTH:
                raise UnsupportedTypeError(
                    f"Column {field.name!r} nests too deep for Parquet {self.url!r}: "
                    f"{depth} schema levels (a list counts 2, a struct 1), and Parquet "
                    f"readers open at most {MAX_SCHEMA_DEPTH}, so the file could not be "
                    "read back. Flatten the column, or write it as JSON Lines."
                )

    def _start(self, schema: pa.Schema) -> None:
        self._writer = pq.ParquetWriter(self._file, schema, **self._options)

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._pending_bytes += batch.nbytes
        size = self._row_group_size
        if size is not None:
            if self._pending_rows >= size:
                self._flush(self._pending_rows - self._pending_rows % size)
        elif self._pending_bytes >= self._max_bytes:
            self._flush(self._pending_rows)

    def _flush(self, rows: int) -> None:
        """Write the first ``rows`` pending rows as row groups; keep the rest pending."""
        assert self._writer is not None
        assert self.schema is not None
        table = pa.Table.from_batches(self._pending, schema=self.schema)
        self._writer.write_table(table.slice(0, rows), row_group_size=self._row_group_size or rows)
        rest = table.slice(rows)
        self._pending = rest.to_batches()
        self._pending_rows = rest.num_rows
        self._pending_bytes = rest.nbytes

    def _finish(self) -> None:
        assert self._writer is not None
        if self._pending_rows:
            self._flush(self._pending_rows)
        self._writer.close()

    def _abandon(self) -> None:
        if self._writer is not None:
            self._writer.close()


def _depth(data_type: pa.DataType) -> int:
    """The Parquet schema levels a column of ``data_type`` takes, its value included."""
    if isinstance(data_type, pa.ExtensionType):
        return _depth(data_type.storage_type)
    if isinstance(data_type, pa.DictionaryType):
        return _depth(data_type.value_type)
    if isinstance(data_type, pa.MapType):
        return 2 + max(_depth(data_type.key_type), _depth(data_type.item_type))
    if isinstance(data_type, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
        return 2 + _depth(data_type.value_type)
    if isinstance(data_type, pa.StructType):
        return 1 + max((_depth(field.type) for field in data_type), default=0)
    return 1
