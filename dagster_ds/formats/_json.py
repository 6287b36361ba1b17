"""JSON Lines and whole-JSON reading, streamed in blocks where the format allows."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as paj

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
from dagster_ds.formats._io import open_input
from dagster_ds.formats._json_depth import (
    DEFAULT_MAX_DEPTH,
    check_depth_option,
    check_line_nesting,
    check_nesting,
)
from dagster_ds.formats._lines import DEFAULT_BLOCK_SIZE, excerpt, line_blocks

_ROW = re.compile(r"\bin row (\d+)")
# An integer literal of 19 digits or more: maybe outside int64, which Arrow reads as float64.
_LONG_INTEGER = re.compile(rb"(?<![\d.eE+\-])-?\d{19,}(?![\d.eE])")
_INT64 = range(-(2**63), 2**63)
# Digits to "0", every other byte to " ": a run of 19 digits is then a plain substring.
_DIGIT_MASK = bytes(
    ord("0") if chr(byte).isdigit() and byte < 128 else ord(" ") for byte in range(256)
)
_RUN_OF_19_DIGITS = b"0" * 19
_WHITESPACE = b" \t\r\n"


def iter_json_batches(
    file: ResolvedFile | str | os.PathLike[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    start_row: int = 0,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    field: str | None = None,
    schema: pa.Schema | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    max_depth: int = DEFAULT_MAX_DEPTH,
    stats: ReadStats | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Iterator[pa.RecordBatch]:
    r"""Stream a JSON Lines file, or read a whole-JSON file, as record batches.

    A file whose first character is ``[`` is a JSON array of objects (or of strings,
    read as a ``text`` column, as the anchor does); with ``field=``, the file is one
    object whose ``field`` key holds that array. Both must be loaded whole. Any other
    file is JSON Lines, parsed by Arrow ``block_size`` bytes at a time. Compression
    follows the extension (``.gz``, ``.bz2``, ``.zst``, ``.xz``).

    Without ``schema``, the schema is inferred from the first block and later blocks
    are read into it; a key that first appears later is an error that says so.

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        batch_size: Most rows in a batch.
        start_row: Rows of the output to skip (resume); JSON Lines skips lines unparsed.
        columns: Columns to keep, in this order.
        filters: Rows to keep, DNF tuples or a ``pyarrow.compute.Expression``.
        field: Key of the top-level object that holds the records.
        schema: Schema to read into, instead of inferring one.
        block_size: Bytes of JSON Lines parsed at a time.
        max_depth: The deepest nesting of objects and lists read (a record is one
            level), checked before parsing. The default, 64, is the most that Arrow IPC
            files hold, and so the cache of a map-style dataset and ``save_to_disk``;
            a streaming read holds more, up to 500 (Arrow's JSON parser recurses per
            level: deeper input would overflow the stack). Parquet files are readable
            up to 50 nested lists.
        stats: Updated with the rows read.
        storage_options: Passed to the fsspec filesystem.

    Returns:
        An iterator of record batches.

    Raises:
        MalformedFileError: A line is not a JSON object, or is nested deeper than
            ``max_depth``; names the file and 1-based line.
        FormatOptionError: ``max_depth`` is not from 1 to 500.

    Example:
        >>> import gzip, tempfile
        >>> path = tempfile.mkdtemp() + "/train.jsonl.gz"
        >>> with gzip.open(path, "wt") as file:
        ...     _ = file.write('{"id": 1}\n{"id": 2}\n{"id": 3}\n')
        >>> [b.num_rows for b in iter_json_batches(path, batch_size=2)]
        [2, 1]
    """
    check_positions(batch_size, start_row)
    check_depth_option(max_depth)
    url = file_url(file)
    expression = to_expression(filters)
    native_skip = start_row if expression is None else 0
    raw = _read(url, storage_options, field, schema, block_size, max_depth, native_skip, stats)
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
    field: str | None,
    schema: pa.Schema | None,
    block_size: int,
    max_depth: int,
    skip: int,
    stats: ReadStats | None,
) -> Iterator[pa.RecordBatch]:
    with open_input(url, storage_options) as stream:
        blocks = line_blocks(stream, block_size)
        leading: list[tuple[int, bytes]] = []
        for line, block in blocks:
            leading.append((line, block))
            if block.strip(_WHITESPACE):
                break
        text = b"".join(block for _, block in leading).lstrip(_WHITESPACE)
        if field is not None or text.startswith(b"["):
            data = text + b"".join(block for _, block in blocks)
            table = _whole_json(url, data, field, schema, max_depth)
            if stats is not None:
                stats.rows_read += table.num_rows
            yield pa.RecordBatch.from_pylist([], schema=table.schema)
            yield from table.slice(skip).to_batches()
            return
        parser = _JsonLinesParser(url, schema, max_depth)
        for first_line, first_block in itertools.chain(leading, blocks):
            line, block = first_line, first_block
            if skip and parser.schema is not None:
                line, block, skip = _skip_lines(line, block, skip)
            table = parser.parse(line, block)
            if table is None:
                continue
            if stats is not None:
                stats.rows_read += table.num_rows
            if skip:
                # Only the first block, parsed whole to fix the schema as an unresumed read.
                rows = min(skip, table.num_rows)
                skip -= rows
                table = table.slice(rows)
            yield from table.to_batches()
        if parser.schema is not None:
            yield pa.RecordBatch.from_pylist([], schema=parser.schema)


def _bytes_file(data: bytes) -> IO[bytes]:
    """A zero-copy file over bytes, for Arrow's readers."""
    return cast(IO[bytes], pa.BufferReader(data))


def _skip_lines(line: int, block: bytes, skip: int) -> tuple[int, bytes, int]:
    """Drop the first ``skip`` non-blank lines of a block without parsing them."""
    lines = block.split(b"\n")
    content = [i for i, text in enumerate(lines) if text.strip(_WHITESPACE)]
    if len(content) <= skip:
        return line + len(lines) - 1, b"", skip - len(content)
    cut = content[skip]
    return line + cut, b"\n".join(lines[cut:]), 0


class _JsonLinesParser:
    """Parses blocks of JSON Lines into one schema (given, or inferred from the first)."""

    def __init__(self, url: str, schema: pa.Schema | None, max_depth: int) -> None:
        self.url = url
        self.schema = schema
        self.max_depth = max_depth
        self._explicit = schema is not None

    def parse(self, line: int, block: bytes) -> pa.Table | None:
        if not block.strip(_WHITESPACE):
            return None
        _check_utf8(self.url, line, block)
        check_line_nesting(self.url, line, block, self.max_depth)
        try:
            table = self._read(block)
        except pa.ArrowInvalid as error:
            raise _malformed_lines(
                self.url, line, block, error, self.schema, self._fails
            ) from error
        if not self._explicit:
            _check_integers(self.url, line, block)
        if self.schema is None:
            self.schema = table.schema
            return table
        for name in table.schema.names:
            if name not in self.schema.names and table[name].null_count < table.num_rows:
                raise self._new_key(line, block, table, name)
        return table.select(self.schema.names)

    def _read(self, block: bytes) -> pa.Table:
        if self.schema is None:
            parse_options = paj.ParseOptions()
        else:
            behaviour = "error" if self._explicit else "infer"
            parse_options = paj.ParseOptions(
                explicit_schema=self.schema, unexpected_field_behavior=behaviour
            )
        read_options = paj.ReadOptions(use_threads=False, block_size=len(block) + 1)
        return paj.read_json(_bytes_file(block), read_options, parse_options)

    def _fails(self, block: bytes) -> bool:
        if not block.strip(_WHITESPACE):
            return False
        try:
            self._read(block)
        except pa.ArrowInvalid:
            return True
        return False

    def _new_key(self, line: int, block: bytes, table: pa.Table, key: str) -> MalformedFileError:
        assert self.schema is not None
        row = pc.index(pc.is_valid(table[key]), True).as_py()
        offset, text = _nth_content_line(block, row)
        return MalformedFileError(
            f"JSON Lines file {self.url!r}: key {key!r} first appears at line {line + offset}, "
            f"after the columns were inferred from the first lines as {self.schema.names!r}. "
            f"The line starts: {excerpt(text)!r}. Pass schema= naming every key.",
            path=self.url,
            line=line + offset,
            excerpt=excerpt(text),
        )


def _nth_content_line(block: bytes, n: int) -> tuple[int, bytes]:
    """Offset and text of the ``n``-th non-blank line of a block (0-based)."""
    seen = 0
    lines = block.split(b"\n")
    for offset, text in enumerate(lines):
        if text.strip(_WHITESPACE):
            if seen == n:
                return offset, text
            seen += 1
    return len(lines) - 1, lines[-1]


def _malformed_lines(
    url: str,
    line: int,
    block: bytes,
    error: Exception,
    schema: pa.Schema | None,
    fails: Callable[[bytes], bool],
) -> MalformedFileError:
    """The error naming the line at fault: pyarrow's row if it says, else found by bisection."""
    match = _ROW.search(str(error))
    if match is not None:
        offset, text = _nth_content_line(block, int(match.group(1)))
    else:
        lines = block.split(b"\n")
        offset = _first_failing_line(lines, fails)
        text = lines[offset]
    number = line + offset
    problem = _json_problem(text)
    if problem is not None:
        what = f"Malformed JSON Lines file {url!r} at line {number}: {problem}"
        fix = "Each line must hold one JSON object; fix or remove that line"
    else:
        shown = schema.to_string(show_schema_metadata=False) if schema is not None else None
        what = f"JSON Lines file {url!r}: line {number} does not fit the schema {shown!r}: " + str(
            error
        ).removeprefix("JSON parse error: ")
        fix = (
            "Pass schema= with types that hold every line (the schema is otherwise inferred "
            "from the first lines, where a column that is always null is inferred as null)"
        )
    return MalformedFileError(
        f"{what}. The line starts: {excerpt(text)!r}. {fix}.",
        path=url,
        line=number,
        excerpt=excerpt(text),
    )


def _first_failing_line(lines: list[bytes], fails: Callable[[bytes], bool]) -> int:
    """Index of the line whose inclusion first makes a prefix of ``lines`` fail to parse."""
    good, bad = 0, len(lines)  # a prefix of `good` lines parses; one of `bad` lines does not
    while bad - good > 1:
        middle = (good + bad) // 2
        if fails(b"\n".join(lines[:middle])):
            bad = middle
        else:
            good = middle
    return bad - 1


def _json_problem(text: bytes) -> str | None:
    """Why one line is not a JSON object, or None if it is (or is blank)."""
    if not text.strip(_WHITESPACE):
        return None
    try:
        value = json.loads(text)
    except ValueError as error:
        detail = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
        column = f" at column {error.colno}" if isinstance(error, json.JSONDecodeError) else ""
        return f"invalid JSON ({detail}{column})"
    if not isinstance(value, dict):
        return f"expected a JSON object, found {type(value).__name__}"
    return None


def _whole_json(
    url: str, data: bytes, field: str | None, schema: pa.Schema | None, max_depth: int
) -> pa.Table:
    """A JSON document holding a list of records (at its top or under ``field``)."""
    _check_utf8(url, 1, data)
    check_nesting(url, data, max_depth, around=2 if field is not None else 1)
    try:
        document = json.loads(data)
    except json.JSONDecodeError as error:
        text = error.doc.splitlines()[error.lineno - 1] if error.doc else ""
        raise MalformedFileError(
            f"Malformed JSON file {url!r} at line {error.lineno}, column {error.colno}: "
            f"{error.msg}. The line starts: {text[:80]!r}. Fix the JSON.",
            path=url,
            line=error.lineno,
            excerpt=text[:80],
        ) from error
    except UnicodeDecodeError as error:
        raise MalformedFileError(
            f"{url!r} is not UTF-8 JSON: {error}. Re-encode it as UTF-8.", path=url
        ) from error
    if field is not None:
        if not isinstance(document, dict) or field not in document:
            keys = sorted(document) if isinstance(document, dict) else type(document).__name__
            raise MalformedFileError(
                f"JSON file {url!r} has no top-level key {field!r} (it holds {keys!r}). "
                "Fix field=, or leave it out for JSON Lines or a top-level list.",
                path=url,
            )
        document = document[field]
    if isinstance(document, dict):
        try:
            return pa.Table.from_pydict(document, schema=schema)
        except (pa.ArrowException, TypeError, ValueError) as error:
            raise MalformedFileError(
                f"JSON file {url!r}: the object under {field!r} is not a mapping of column "
                f"names to equal-length lists: {error}. Fix field= or the file.",
                path=url,
            ) from error
    if not isinstance(document, list):
        raise MalformedFileError(
            f"JSON file {url!r} holds a {type(document).__name__}, not a list of records. "
            "Pass field= naming the key that holds the list.",
            path=url,
        )
    if schema is None and _LONG_INTEGER.search(data):
        for index, item in enumerate(document):
            _check_value(url, f"element {index} of the list", item)
    if document and not any(isinstance(item, dict) for item in document):
        document = [{"text": item} for item in document]
    bad = next((i for i, item in enumerate(document) if not isinstance(item, dict)), None)
    if bad is not None:
        raise MalformedFileError(
            f"JSON file {url!r}: element {bad} of the list is a {type(document[bad]).__name__}, "
            f"not an object: {json.dumps(document[bad])[:80]!r}. Every element must be an "
            "object (or every element a string).",
            path=url,
        )
    if not document:
        return (schema or pa.schema([])).empty_table()
    lines = "\n".join(json.dumps(item, ensure_ascii=False) for item in document).encode()
    parse_options = paj.ParseOptions(explicit_schema=schema) if schema is not None else None
    read_options = paj.ReadOptions(use_threads=False, block_size=len(lines) + 1)
    try:
        return paj.read_json(_bytes_file(lines), read_options, parse_options)
    except pa.ArrowInvalid as error:
        match = _ROW.search(str(error))
        where = f"element {match.group(1)}" if match else "the list"
        raise MalformedFileError(
            f"JSON file {url!r}: cannot read {where} of the records: {error}. Make the "
            "records' types consistent, or pass schema=.",
            path=url,
        ) from error


def _check_integers(url: str, line: int, block: bytes) -> None:
    """Refuse an integer outside int64: Arrow would silently read its column as float64."""
    if _RUN_OF_19_DIGITS not in block.translate(_DIGIT_MASK):
        return  # (a C-speed scan: the regular expression is slow on large blocks)
    for match in _LONG_INTEGER.finditer(block):
        offset = block.count(b"\n", 0, match.start())
        text = block.split(b"\n")[offset]
        try:
            value = json.loads(text)
        except ValueError:
            continue  # reported as malformed by the parser
        _check_value(url, f"line {line + offset}", value, line + offset)


def _check_value(url: str, where: str, value: Any, line: int | None = None) -> None:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(cast("dict[str, Any]", item).values())
        elif isinstance(item, list):
            pending.extend(cast("list[Any]", item))
        elif isinstance(item, int) and not isinstance(item, bool) and item not in _INT64:
            raise MalformedFileError(
                f"JSON file {url!r}, {where}: the integer {item} does not fit in int64, and "
                "reading it would turn its whole column into float64 (changing values such as "
                "1 into 1.0 and rounding it). Write such integers as JSON strings "
                '("12345678901234567890") to read them exactly as text, or as floats '
                "(1.0e20) to accept rounding.",
                path=url,
                line=line,
            )


def _check_utf8(url: str, line: int, block: bytes) -> None:
    """Refuse bytes that are not UTF-8 (JSON's encoding), naming the line."""
    try:
        block.decode("utf-8")
    except UnicodeDecodeError as error:
        offset = block.count(b"\n", 0, error.start)
        text = block.split(b"\n")[offset]
        raise MalformedFileError(
            f"JSON file {url!r}, line {line + offset}: byte {block[error.start]:#04x} is not "
            f"UTF-8 ({error.reason}). JSON files are UTF-8: re-encode the file (e.g. iconv -f "
            f"latin1 -t utf-8). The line starts: {excerpt(text)!r}.",
            path=url,
            line=line + offset,
            excerpt=excerpt(text),
        ) from error
