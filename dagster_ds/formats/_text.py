"""Plain text: one row per line in a ``text`` column, read and written column-wise."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc

from dagster_ds.errors import MalformedFileError, UnsupportedTypeError
from dagster_ds.formats._batches import (
    DEFAULT_BATCH_SIZE,
    Filters,
    ReadStats,
    check_positions,
    finish,
    to_expression,
)
from dagster_ds.formats._file import ResolvedFile, file_url
from dagster_ds.formats._io import open_input
from dagster_ds.formats._lines import DEFAULT_BLOCK_SIZE, excerpt, line_blocks
from dagster_ds.formats._sink import BatchWriter
from dagster_ds.formats._text_columns import join, large, string_bytes

TEXT_SCHEMA = pa.schema([pa.field("text", pa.string())])


def iter_text_batches(
    file: ResolvedFile | str | os.PathLike[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    start_row: int = 0,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    keep_linebreaks: bool = False,
    block_size: int = DEFAULT_BLOCK_SIZE,
    stats: ReadStats | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Iterator[pa.RecordBatch]:
    r"""Stream a UTF-8 text file as batches with one ``text`` row per line, as the anchor.

    ``\r\n`` and ``\r`` end lines as ``\n`` does (universal newlines); an empty line
    is an empty string and a final line break adds no row. Compression follows the
    extension.

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        batch_size: Most rows in a batch.
        start_row: Lines to skip (resume); skipped lines are counted, not decoded.
        columns: Columns to keep (only ``["text"]`` exists).
        filters: Rows to keep, DNF tuples or a ``pyarrow.compute.Expression``.
        keep_linebreaks: End each row with its ``\n``.
        block_size: Bytes decoded at a time.
        stats: Updated with the rows read.
        storage_options: Passed to the fsspec filesystem.

    Returns:
        An iterator of record batches with one ``text`` column.

    Raises:
        MalformedFileError: The file is not valid UTF-8; names the file and line.

    Example:
        >>> import gzip, tempfile
        >>> path = tempfile.mkdtemp() + "/notes.txt.gz"
        >>> with gzip.open(path, "wt") as file:
        ...     _ = file.write("first line\n\nthird line\n")
        >>> next(iter_text_batches(path)).column(0).to_pylist()
        ['first line', '', 'third line']
    """
    check_positions(batch_size, start_row)
    url = file_url(file)
    expression = to_expression(filters)
    native_skip = start_row if expression is None else 0
    raw = _read(url, storage_options, keep_linebreaks, block_size, native_skip, stats)
    return finish(
        raw,
        source=url,
        batch_size=batch_size,
        skip=start_row - native_skip,
        columns=columns,
        expression=expression,
        stats=stats,
    )


def _read(
    url: str,
    storage_options: Mapping[str, Any] | None,
    keep_linebreaks: bool,
    block_size: int,
    skip: int,
    stats: ReadStats | None,
) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_pylist([], schema=TEXT_SCHEMA)
    with open_input(url, storage_options) as stream:
        for line, raw in line_blocks(stream, block_size):
            block = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            complete = block.endswith(b"\n")
            if skip:
                count = block.count(b"\n") + (0 if complete else 1)
                if count <= skip:
                    skip -= count
                    continue
                cut = -1
                for _ in range(skip):
                    cut = block.index(b"\n", cut + 1)
                line, block, skip = line + skip, block[cut + 1 :], 0
            lines = _split(url, line, block[:-1] if complete else block)
            if keep_linebreaks:
                ended = join(lines, large(""), separator="\n")
                if not complete:
                    ended = pa.concat_arrays(
                        [ended.slice(0, len(lines) - 1), lines.slice(len(lines) - 1)]
                    )
                lines = ended
            if stats is not None:
                stats.rows_read += len(lines)
            yield pa.RecordBatch.from_arrays([pc.cast(lines, pa.string())], schema=TEXT_SCHEMA)


def _split(url: str, line: int, block: bytes) -> pa.Array:
    r"""The lines of a block (line breaks normalised to ``\n``, final one removed)."""
    try:
        text = pa.array([block], pa.large_binary()).cast(pa.large_string())
    except pa.ArrowInvalid:
        try:
            block.decode("utf-8")
        except UnicodeDecodeError as error:
            number = line + block.count(b"\n", 0, error.start)
            start = block.rfind(b"\n", 0, error.start) + 1
            end = block.find(b"\n", error.start)
            text_line = block[start : end if end >= 0 else len(block)]
            raise MalformedFileError(
                f"{url!r} is not valid UTF-8 at line {number} (byte {error.start - start + 1} "
                f"of the line): {error.reason}. The line starts: {excerpt(text_line)!r}. "
                "Re-encode the file as UTF-8.",
                path=url,
                line=number,
                excerpt=excerpt(text_line),
            ) from error
        raise
    return pc.split_pattern(text, "\n").flatten()


class TextWriter(BatchWriter):
    r"""Writes a string column as plain text, one value per line.

    Example:
        >>> import pathlib, tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/notes.txt"
        >>> with TextWriter(path) as writer:
        ...     writer.write(pa.table({"text": ["a", None, "b"], "id": [1, 2, 3]}))
        >>> pathlib.Path(path).read_text()
        'a\n\nb\n'
    """

    format = "text"

    def __init__(
        self,
        url: str | os.PathLike[str] | BinaryIO,
        *,
        schema: pa.Schema | None = None,
        storage_options: Mapping[str, Any] | None = None,
        column: str = "text",
    ) -> None:
        """Open the file.

        Args:
            url: Target path or fsspec URL, or a file object opened in binary mode.
            schema: Schema of the file (default: the first batch's).
            storage_options: Passed to the fsspec filesystem.
            column: The string column written; the others are ignored.
        """
        self._column = column
        super().__init__(url, schema=schema, storage_options=storage_options)

    def _check_schema(self, schema: pa.Schema) -> None:
        if not schema.names:
            return
        index = schema.get_field_index(self._column)
        kind = schema.field(index).type if index >= 0 else None
        if kind is None or not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise UnsupportedTypeError(
                f"Text file {self.url!r} needs a string column {self._column!r}; the schema "
                f"has {schema.names!r} ({kind}). Pass column= naming a string column."
            )

    def _start(self, schema: pa.Schema) -> None:
        pass

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        text = pc.fill_null(pc.cast(batch.column(self._column), pa.large_string()), large(""))
        self._file.write(string_bytes(join(text, large(""), separator="\n")))

    def _finish(self) -> None:
        pass
