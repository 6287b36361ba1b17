"""CSV and TSV reading, streamed block by block through Arrow's CSV reader."""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import pyarrow.csv as pcsv

from dagster_ds.errors import FormatOptionError, MalformedFileError
from dagster_ds.formats._batches import (
    DEFAULT_BATCH_SIZE,
    Filters,
    ReadStats,
    check_positions,
    finish,
    to_expression,
)
from dagster_ds.formats._csv_rows import long_row
from dagster_ds.formats._file import ResolvedFile, file_url
from dagster_ds.formats._io import open_input
from dagster_ds.formats._lines import excerpt, line_blocks

DEFAULT_CSV_BLOCK_SIZE = 1 << 20
# The largest block a CSV is read in (a row holds every line of its quoted values):
# Arrow parses a block at a time, and a row longer than one block is read again in
# blocks twice as big, up to this size (max_row_bytes= changes it).
MAX_CSV_ROW_BYTES = 256 << 20
_ARROW_MAX_BLOCK = (1 << 31) - 1
_CONVERSION = re.compile(
    r"column #(\d+): (?:Row #\d+: )?CSV conversion error to (.+?): invalid value '(.*)'$", re.S
)


def iter_csv_batches(
    file: ResolvedFile | str | os.PathLike[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    start_row: int = 0,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    delimiter: str = ",",
    column_names: Sequence[str] | None = None,
    skip_rows: int = 0,
    schema: pa.Schema | None = None,
    quote_char: str = '"',
    block_size: int = DEFAULT_CSV_BLOCK_SIZE,
    max_row_bytes: int = MAX_CSV_ROW_BYTES,
    encoding: str = "utf-8",
    stats: ReadStats | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Iterator[pa.RecordBatch]:
    r"""Stream a CSV (or TSV, ``delimiter="\t"``) file as record batches.

    Types are inferred from the first block unless ``schema`` gives them. As with the
    anchor (pandas), empty fields are null; a quoted empty field (``""``) is an empty
    string. Quoted values may span lines. Compression follows the extension.

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        batch_size: Most rows in a batch.
        start_row: Data rows to skip (resume).
        columns: Columns to keep, in this order.
        filters: Rows to keep, DNF tuples or a ``pyarrow.compute.Expression``.
        delimiter: Field separator.
        column_names: Names of the columns, when the file has no header row.
        skip_rows: Rows to skip at the top of the file, before the header.
        schema: Column names and types to read into (its names select the columns).
        quote_char: The quoting character.
        block_size: Bytes parsed at a time. A longer row (a 10 MB text cell, say) is
            read again with blocks twice as big, up to ``max_row_bytes``.
        max_row_bytes: The largest block tried, in bytes (default 256 MiB, or
            ``block_size`` when larger, at most 2 GiB - 1): a row this long is always
            read; Arrow reads some rows up to twice as long, and refuses longer ones
            with an error naming the line.
        encoding: The file's text encoding (``"latin-1"``, ``"cp1252"``...); text that
            is not valid in it is an error naming the line, never bytes.
        stats: Updated with the rows read.
        storage_options: Passed to the fsspec filesystem.

    Returns:
        An iterator of record batches.

    Raises:
        MalformedFileError: A row has the wrong number of fields, a value does not
            fit its column's type, a text value is not valid in ``encoding``, the
            header repeats a name, or a row is longer than ``max_row_bytes``; names the
            file and the 1-based line.

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/scores.tsv"
        >>> with open(path, "w") as file:
        ...     _ = file.write("name\tscore\nada\t3\nbob\t\n")
        >>> batch = next(iter_csv_batches(path, delimiter="\t"))
        >>> batch.to_pylist()
        [{'name': 'ada', 'score': 3}, {'name': 'bob', 'score': None}]
    """
    check_positions(batch_size, start_row)
    if not 0 < max_row_bytes <= _ARROW_MAX_BLOCK:
        raise FormatOptionError(
            f"max_row_bytes must be from 1 to {_ARROW_MAX_BLOCK} (Arrow's largest block), "
            f"got {max_row_bytes!r}."
        )
    url = file_url(file)
    expression = to_expression(filters)
    names = list(column_names) if column_names is not None else None
    options = _CsvOptions(
        delimiter, quote_char, names, skip_rows, schema, block_size, encoding, max_row_bytes
    )
    raw = _read(url, storage_options, options, stats)
    return finish(
        raw,
        source=url,
        batch_size=batch_size,
        skip=start_row,
        columns=columns,
        expression=expression,
        stats=stats,
    )


@dataclass(frozen=True)
class _CsvOptions:
    delimiter: str
    quote_char: str
    column_names: list[str] | None
    skip_rows: int
    schema: pa.Schema | None
    block_size: int
    encoding: str = "utf-8"
    max_row_bytes: int = MAX_CSV_ROW_BYTES


def _read(
    url: str,
    storage_options: Mapping[str, Any] | None,
    options: _CsvOptions,
    stats: ReadStats | None,
) -> Iterator[pa.RecordBatch]:
    """The file's batches; a row longer than a block is read again with bigger blocks.

    Arrow parses a block at a time and cannot split a row between two blocks. On such a
    row the read starts over with blocks twice as big (up to ``max_row_bytes``, or
    ``block_size`` if larger), skips the rows already handed out, and keeps the column
    types the first read inferred, so the batches fit together.
    """
    limit = min(max(options.max_row_bytes, options.block_size), _ARROW_MAX_BLOCK)
    block_size = options.block_size
    types: pa.Schema | None = None
    done = 0
    while True:
        read = _Read(url, storage_options, options, block_size, types)
        try:
            for batch in read.batches(skip=done, announce=types is None):
                done += batch.num_rows
                if stats is not None:
                    stats.rows_read += batch.num_rows
                yield batch
            return
        except _RowTooLong as error:
            if block_size >= limit:
                raise _too_long(url, storage_options, options, limit, done) from error.__cause__
            block_size = min(block_size * 2, limit)
            types = read.types


class _RowTooLong(Exception):
    """A row does not fit in one block (Arrow's "straddling object")."""


class _Read:
    """One pass of Arrow's CSV reader over the file, with ``block_size`` blocks."""

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None,
        options: _CsvOptions,
        block_size: int,
        types: pa.Schema | None,
    ) -> None:
        self.url = url
        self.storage_options = storage_options
        self.options = options
        self.block_size = block_size
        self.types = types  # the column types, once a block is read

    def batches(self, *, skip: int, announce: bool) -> Iterator[pa.RecordBatch]:
        """The batches after the first ``skip`` rows (first an empty one, if ``announce``).

        Raises:
            _RowTooLong: A row is longer than a block.
            MalformedFileError: The file cannot be parsed.
        """
        options = self.options
        invalid: list[pcsv.InvalidRow] = []

        def on_invalid_row(row: pcsv.InvalidRow) -> Literal["skip", "error"]:
            invalid.append(row)
            return "error"

        read_options = pcsv.ReadOptions(
            use_threads=False,
            block_size=self.block_size,
            skip_rows=options.skip_rows,
            column_names=options.column_names,
            encoding=options.encoding,
        )
        parse_options = pcsv.ParseOptions(
            delimiter=options.delimiter,
            quote_char=options.quote_char,
            newlines_in_values=True,
            invalid_row_handler=on_invalid_row,
        )
        schema = options.schema
        convert_options = pcsv.ConvertOptions(
            column_types=schema if schema is not None else self.types,
            include_columns=schema.names if schema is not None else None,
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        )
        url = self.url
        with open_input(url, self.storage_options) as stream:
            try:
                reader = pcsv.open_csv(stream, read_options, parse_options, convert_options)
                self.types = reader.schema
                _check_header(url, reader.schema, options)
                if announce:
                    yield pa.RecordBatch.from_pylist([], schema=reader.schema)
                for batch in reader:
                    if skip >= batch.num_rows:
                        skip -= batch.num_rows
                        continue
                    _check_text(url, self.storage_options, options, batch)
                    yield batch.slice(skip)
                    skip = 0
            except pa.ArrowInvalid as error:
                if "Empty CSV file" in str(error):
                    if schema is not None:
                        yield pa.RecordBatch.from_pylist([], schema=schema)
                    return
                if "straddling object" in str(error):
                    raise _RowTooLong from error
                raise _malformed(url, self.storage_options, options, error, invalid) from error


def _too_long(
    url: str,
    storage_options: Mapping[str, Any] | None,
    options: _CsvOptions,
    limit: int,
    done: int,
) -> MalformedFileError:
    """The error for a row Arrow could not read in blocks of ``limit`` bytes."""
    header = options.skip_rows + (1 if options.column_names is None else 0)
    with open_input(url, storage_options) as stream:
        located = long_row(stream, options.quote_char, limit, skip=header + done)
    where = f" at line {located[0]} (it starts: {located[1]!r})" if located else ""
    return MalformedFileError(
        f"CSV file {url!r}{where}: a row is longer than {limit} bytes, the most read at "
        "once. Pass max_row_bytes= larger than the row (in bytes), or check quote_char=: a "
        "quote that is never closed makes the rest of the file one row.",
        path=url,
        line=located[0] if located else None,
        excerpt=located[1] if located else None,
    )


def _check_header(url: str, schema: pa.Schema, options: _CsvOptions) -> None:
    """Refuse a header that repeats a column name (the columns would be ambiguous)."""
    seen: set[str] = set()
    repeated = [name for name in schema.names if name in seen or seen.add(name)]
    if repeated:
        line = options.skip_rows + 1
        raise MalformedFileError(
            f"CSV file {url!r}: the header (line {line}) repeats the column name(s) "
            f"{sorted(set(repeated))!r}: {schema.names!r}. Rename them in the file, or pass "
            "column_names= with one unique name per column and skip_rows=1.",
            path=url,
            line=line,
        )


def _check_text(
    url: str, storage_options: Mapping[str, Any] | None, options: _CsvOptions, batch: Any
) -> None:
    """Refuse text that is not valid in the file's encoding (Arrow would read it as bytes)."""
    wanted = options.schema
    for index, field in enumerate(batch.schema):
        if not pa.types.is_binary(field.type) and not pa.types.is_large_binary(field.type):
            continue
        if wanted is not None and field.name in wanted.names:
            continue  # binary asked for
        located = _locate(
            url,
            storage_options,
            options,
            lambda fields, index=index: len(fields) > index and "\ufffd" in fields[index],
        )
        where = f" at line {located[0]}" if located else ""
        raise MalformedFileError(
            f"CSV file {url!r}{where}: column {field.name!r} holds text that is not valid "
            f"{options.encoding} (it would be read as bytes). Pass encoding= with the file's "
            "encoding (e.g. encoding='latin-1' or 'cp1252'), or re-encode the file as UTF-8.",
            path=url,
            line=located[0] if located else None,
            excerpt=located[1] if located else None,
        )


def _malformed(
    url: str,
    storage_options: Mapping[str, Any] | None,
    options: _CsvOptions,
    error: pa.ArrowInvalid,
    invalid: list[pcsv.InvalidRow],
) -> MalformedFileError:
    message = str(error)
    conversion = _CONVERSION.search(message)
    if invalid:
        row = invalid[0]
        expected, actual = row.expected_columns, row.actual_columns
        reason = f"expected {expected} fields, found {actual}"
        fix = "Quote values that contain the delimiter, or fix the row"
        located = _locate(url, storage_options, options, lambda fields: len(fields) != expected)
    elif conversion is not None:
        index, target, value = int(conversion.group(1)), conversion.group(2), conversion.group(3)
        reason = f"value {value!r} of column #{index} is not a valid {target}"
        fix = "Pass schema= with a type that holds every value, or fix the value"
        located = _locate(
            url,
            storage_options,
            options,
            lambda fields: len(fields) > index and fields[index] == value,
        )
    else:
        return MalformedFileError(
            f"Cannot parse CSV file {url!r}: {message}. Check delimiter= and quote_char=.",
            path=url,
        )
    if located is None:
        return MalformedFileError(
            f"Malformed CSV file {url!r}: {reason} ({message}). {fix}.", path=url
        )
    line, text = located
    return MalformedFileError(
        f"Malformed CSV file {url!r} at line {line}: {reason}. The line starts: {text!r}. {fix}.",
        path=url,
        line=line,
        excerpt=text,
    )


def _locate(
    url: str,
    storage_options: Mapping[str, Any] | None,
    options: _CsvOptions,
    is_bad: Callable[[list[str]], bool],
) -> tuple[int, str] | None:
    """The 1-based line and text of the first data row ``is_bad`` accepts (error path only)."""
    with open_input(url, storage_options) as stream:
        lines = _text_lines(stream)
        rows = csv.reader(lines, delimiter=options.delimiter, quotechar=options.quote_char)
        skip = options.skip_rows + (1 if options.column_names is None else 0)
        end = 0
        for fields in rows:
            start, end = end + 1, rows.line_num
            if not fields:
                continue
            if skip:
                skip -= 1
                continue
            if is_bad(fields):
                text = options.delimiter.join(fields)
                return start, excerpt(text.encode())
    return None


def _text_lines(stream: Any) -> Iterator[str]:
    for _, block in line_blocks(stream):
        yield from io.StringIO(block.decode("utf-8", "replace"), newline="")  # located by \ufffd
