"""The writer contract: batches in, one file out, published atomically on close."""

from __future__ import annotations

import abc
import contextlib
import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any, BinaryIO, ClassVar

import pyarrow as pa

from dagster_ds.errors import SchemaMismatchError
from dagster_ds.formats._file import file_url
from dagster_ds.formats._io import AtomicOutput, FileObjectOutput


class BatchWriter(abc.ABC):
    """Writes Arrow record batches to one file, incrementally and atomically.

    Batches are written as they come (memory stays bounded by one batch, or one row
    group for Parquet). The file is written under a temporary name next to the target
    and published by `close`; `abort`, or leaving the ``with`` block by an exception,
    removes it, so a failed write never leaves a target file. The first batch (or
    ``schema=``) fixes the schema; later batches are cast to it when their column
    names match, otherwise `SchemaMismatchError` is raised.

    The target may also be a file object opened in binary mode: bytes then go
    straight into it (it stays open, and a failed write cannot be taken back).

    Attributes:
        url: The target file (a file object's name).
        schema: The schema written, once known.
        rows_written: Rows written so far.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> batches = pa.table({"id": list(range(2500))}).to_batches(max_chunksize=1000)
        >>> path = tempfile.mkdtemp() + "/train.parquet"
        >>> with open_writer(path, row_group_size=1000) as writer:
        ...     for batch in batches:
        ...         writer.write(batch)
        >>> writer.rows_written
        2500
    """

    format: ClassVar[str]
    _stream_compression: ClassVar[bool] = True

    def __init__(
        self,
        url: str | os.PathLike[str] | BinaryIO,
        *,
        schema: pa.Schema | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.schema: pa.Schema | None = None
        self.rows_written = 0
        self._closed = False
        self._output: AtomicOutput | FileObjectOutput
        if isinstance(url, str | os.PathLike):
            self._output = AtomicOutput(
                file_url(url),
                storage_options,
                compression="infer" if self._stream_compression else None,
            )
        else:
            self._output = FileObjectOutput(url, f"Writing {self.format}")
        self.url = self._output.url
        self._file: Any = self._output.file
        if schema is not None:
            try:
                self._set_schema(schema)
            except BaseException:
                self._discard()
                raise

    def write(self, data: pa.RecordBatch | pa.Table) -> None:
        """Append a record batch or a table to the file."""
        if self._closed:
            raise ValueError(f"The writer of {self.url!r} is closed; open a new one.")
        if self.schema is None:
            self._set_schema(data.schema)
        batches = data.to_batches() if isinstance(data, pa.Table) else [data]
        for batch in batches:
            conformed = self._conform(batch)
            if conformed.num_rows:
                self._write_batch(conformed)
                self.rows_written += conformed.num_rows

    def close(self) -> None:
        """Finish the file and publish it under its name."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.schema is None:
                self._set_schema(pa.schema([]))
            self._finish()
        except BaseException:
            self._discard()
            raise
        self._output.commit()

    @property
    def bytes_written(self) -> int:
        """The size of the finished file in bytes (0 until `close`)."""
        return self._output.bytes_written

    def abort(self) -> None:
        """Drop the file being written; nothing appears under the target name."""
        if not self._closed:
            self._closed = True
            self._discard()

    def _discard(self) -> None:
        with contextlib.suppress(Exception):
            self._abandon()
        self._output.discard()

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _set_schema(self, schema: pa.Schema) -> None:
        self._check_schema(schema)
        self.schema = schema
        self._start(schema)

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        assert self.schema is not None
        if batch.schema.equals(self.schema):
            return batch
        if batch.schema.names == self.schema.names:
            try:
                return batch.cast(self.schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
                reason = str(error)
        else:
            reason = f"columns {batch.schema.names!r} instead of {self.schema.names!r}"
        raise SchemaMismatchError(
            f"A batch written to {self.url!r} does not fit the file's schema: {reason}. "
            f"File schema: {self.schema.to_string(show_schema_metadata=False)!r}; batch schema: "
            f"{batch.schema.to_string(show_schema_metadata=False)!r}. Cast or select the "
            "batch's columns first."
        )

    def _check_schema(self, schema: pa.Schema) -> None:  # noqa: B027
        """Raise `UnsupportedTypeError` for a column the format cannot hold."""

    @abc.abstractmethod
    def _start(self, schema: pa.Schema) -> None:
        """Begin the file once its schema is known (write a header, open a writer)."""

    @abc.abstractmethod
    def _write_batch(self, batch: pa.RecordBatch) -> None:
        """Write one non-empty batch that has the file's schema."""

    @abc.abstractmethod
    def _finish(self) -> None:
        """Write what ends the file (footer, closing bracket, buffered rows)."""

    def _abandon(self) -> None:  # noqa: B027
        """Release what the format holds open when the file is discarded."""
