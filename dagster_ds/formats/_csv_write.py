"""CSV and TSV writing, column-wise in Arrow, with the anchor's (pandas) conventions."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, BinaryIO

import pyarrow as pa

from dagster_ds.errors import FormatOptionError, UnsupportedTypeError
from dagster_ds.formats._sink import BatchWriter
from dagster_ds.formats._text_columns import join_lines, render, unsupported


class CsvWriter(BatchWriter):
    r"""Writes batches as CSV, as ``datasets.Dataset.to_csv`` does by default.

    A header row, no index column (``index=True`` adds one, numbered across the whole
    file), ``\n`` line ends, empty fields for nulls and NaN, ``True``/``False``,
    floats with a decimal point, and strings quoted only when needed (a delimiter,
    quote or line break inside, or a value such as ``NA`` or ``""`` that would
    otherwise read back as null). Compression follows the extension.

    Example:
        >>> import pathlib, tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/train.csv"
        >>> with CsvWriter(path) as writer:
        ...     writer.write(pa.table({"text": ["a,b", None], "score": [1.0, 2.5]}))
        >>> print(pathlib.Path(path).read_text(), end="")
        text,score
        "a,b",1.0
        ,2.5
    """

    format = "csv"

    def __init__(
        self,
        url: str | os.PathLike[str] | BinaryIO,
        *,
        schema: pa.Schema | None = None,
        storage_options: Mapping[str, Any] | None = None,
        delimiter: str = ",",
        header: bool = True,
        index: bool = False,
        quote_char: str = '"',
    ) -> None:
        r"""Open the file.

        Args:
            url: Target path or fsspec URL, or a file object opened in binary mode.
            schema: Schema of the file (default: the first batch's).
            storage_options: Passed to the fsspec filesystem.
            delimiter: Field separator (``"\t"`` for TSV).
            header: Write the column names first.
            index: Write the row number as a first, unnamed column (as pandas).
            quote_char: The quoting character.
        """
        if len(delimiter) != 1 or len(quote_char) != 1 or delimiter == quote_char:
            raise FormatOptionError(
                f"delimiter and quote_char must be two different single characters, got "
                f"{delimiter!r} and {quote_char!r}."
            )
        self._delimiter = delimiter
        self._quote_char = quote_char
        self._header = header
        self._index = index
        super().__init__(url, schema=schema, storage_options=storage_options)

    def _check_schema(self, schema: pa.Schema) -> None:
        for field in schema:
            if unsupported(field.type):
                raise UnsupportedTypeError(
                    f"Column {field.name!r} of type {field.type} cannot be written to CSV "
                    f"{self.url!r}. Write Parquet or JSON Lines instead, or cast the column "
                    "to string first."
                )

    def _start(self, schema: pa.Schema) -> None:
        if not self._header or not schema.names:
            return
        names = ([""] if self._index else []) + schema.names
        line = self._delimiter.join(self._quote_name(name) for name in names) + "\n"
        self._file.write(line.encode())

    def _quote_name(self, name: str) -> str:
        q = self._quote_char
        if any(char in name for char in (self._delimiter, q, "\r", "\n")):
            return q + name.replace(q, q + q) + q
        return name

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        columns = [render(column, self._delimiter, self._quote_char) for column in batch.columns]
        if self._index:
            start = self.rows_written
            numbers = pa.array(range(start, start + batch.num_rows), pa.int64())
            columns.insert(0, render(numbers, self._delimiter))
        if columns:
            self._file.write(join_lines(columns, self._delimiter))

    def _finish(self) -> None:
        pass
