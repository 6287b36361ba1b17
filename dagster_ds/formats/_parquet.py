"""Parquet: row-group aware reading with statistics pruning, and row-group sized writing."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from dagster_ds.errors import (
    ColumnNotFoundError,
    FormatOptionError,
    InvalidFilterError,
    MalformedFileError,
    RowGroupIndexError,
)
from dagster_ds.formats._ahead import WORKERS, RowGroupsAhead, usable_cores
from dagster_ds.formats._batches import (
    DEFAULT_BATCH_SIZE,
    Filters,
    ReadStats,
    check_positions,
    finish,
    to_expression,
)
from dagster_ds.formats._file import ResolvedFile, file_url
from dagster_ds.formats._io import is_local, url_to_fs

if TYPE_CHECKING:
    import pyarrow.dataset as ds


@dataclass(frozen=True)
class RowGroup:
    """One row group of a Parquet file, as listed by `list_row_groups`.

    Attributes:
        index: Position of the row group in the file (0-based).
        num_rows: Rows in the row group.
        total_byte_size: Uncompressed size of its column data, in bytes.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/train.parquet"
        >>> write_batches([pa.table({"id": list(range(250))})], path, row_group_size=100)
        250
        >>> [group.num_rows for group in list_row_groups(path)]
        [100, 100, 50]
    """

    index: int
    num_rows: int
    total_byte_size: int


# Pages are read through a buffer of this size, as they are decoded. Arrow's default
# (``pre_buffer``) reads a row group's column chunks whole first: a file written as one
# 100 MB row group then costs 100 MB of memory before its first batch, and more time.
READ_BUFFER_BYTES = 1 << 20


def _open(url: str, storage_options: Mapping[str, Any] | None) -> pq.ParquetFile:
    """The file's footer read, its pages verified against their checksums when read.

    Its pages are streamed (`READ_BUFFER_BYTES`), never a whole row group read first.
    `pyarrow.parquet.ParquetFile`, not a `pyarrow.dataset` fragment: importing
    ``pyarrow.dataset`` costs ~40 MB (it loads pandas), paid only for ``filters=``.
    """
    fs, path = url_to_fs(url, storage_options)
    source: Any = path if is_local(fs) else fs.open(path, "rb")
    try:
        opened = pq.ParquetFile(
            source,
            page_checksum_verification=True,
            pre_buffer=False,
            buffer_size=READ_BUFFER_BYTES,
        )
        _check_features_metadata(url, opened.schema_arrow)
    except Exception as error:
        if not isinstance(source, str):
            source.close()
        if not _unreadable(error):
            raise
        raise _bad_footer(url, error) from error
    return opened


def _check_features_metadata(url: str, schema: pa.Schema) -> None:
    """Refuse a footer whose ``huggingface`` metadata (the features) is not JSON text.

    Raises:
        pa.ArrowInvalid: It is not (a corrupt footer: `_unreadable` says so).
    """
    raw = (schema.metadata or {}).get(b"huggingface")
    if raw is None:
        return
    try:
        json.loads(raw)
    except ValueError as error:  # UnicodeDecodeError and JSONDecodeError both
        raise pa.ArrowInvalid(f"its 'huggingface' schema metadata is not JSON ({error})") from None


def _unreadable(error: Exception) -> bool:
    """Whether ``error``, raised by Arrow reading a Parquet file, says the bytes are bad.

    Arrow reports a footer it cannot decode as a plain ``OSError`` (thrift), an
    ``ArrowInvalid`` (the embedded Arrow schema) or a ``UnicodeDecodeError`` (a column
    name), and a page whose checksum does not match as a plain ``OSError``. A missing
    file, a refused permission or a dropped connection keep their own types (subclasses
    of ``OSError``) and are not the file's fault.
    """
    return isinstance(error, pa.ArrowInvalid | UnicodeDecodeError) or type(error) is OSError


def _bad_footer(url: str, error: Exception) -> MalformedFileError:
    return MalformedFileError(
        f"{url!r} is not a valid Parquet file, or its footer is corrupt: {str(error).strip()}. "
        "Restore the file from its source (or write it again), or pass the right format=.",
        path=url,
    )


def read_parquet_schema(
    file: ResolvedFile | str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> pa.Schema:
    """The Arrow schema of a Parquet file, read from its footer only.

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        storage_options: Passed to the fsspec filesystem.

    Returns:
        The schema, with the file's schema metadata.

    Raises:
        MalformedFileError: The file is not Parquet, or its footer is corrupt.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/t.parquet"
        >>> write_batches([pa.table({"id": [1, 2]})], path)
        2
        >>> read_parquet_schema(path).names
        ['id']
    """
    with _open(file_url(file), storage_options) as opened:
        return opened.schema_arrow


def _fragment(url: str, storage_options: Mapping[str, Any] | None) -> ds.ParquetFileFragment:
    """The file as a `pyarrow.dataset` fragment, for filtered reads (pages verified)."""
    import pyarrow.dataset as ds

    fs, path = url_to_fs(url, storage_options)
    filesystem = (
        pafs.LocalFileSystem() if is_local(fs) else pafs.PyFileSystem(pafs.FSSpecHandler(fs))  # pyright: ignore[reportAbstractUsage]
    )
    options = ds.ParquetFragmentScanOptions(page_checksum_verification=True)
    file_format = ds.ParquetFileFormat(default_fragment_scan_options=options)
    fragment = cast(
        "ds.ParquetFileFragment", file_format.make_fragment(path, filesystem=filesystem)
    )
    try:
        fragment.ensure_complete_metadata()
        _check_features_metadata(url, fragment.physical_schema)
    except Exception as error:
        if not _unreadable(error):
            raise
        raise _bad_footer(url, error) from error
    return fragment


def list_row_groups(
    file: ResolvedFile | str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> list[RowGroup]:
    """The row groups of a Parquet file, read from its footer only.

    A streaming dataset makes one shard per row group from this list (``reshard()``)
    and reads each with ``iter_parquet_batches(file, row_groups=[group.index])``.

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        storage_options: Passed to the fsspec filesystem.

    Returns:
        The row groups in file order.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/t.parquet"
        >>> write_batches([pa.table({"id": list(range(250))})], path, row_group_size=100)
        250
        >>> [(group.index, group.num_rows) for group in list_row_groups(path)]
        [(0, 100), (1, 100), (2, 50)]
    """
    with _open(file_url(file), storage_options) as opened:
        metadata = opened.metadata
        groups = (metadata.row_group(index) for index in range(metadata.num_row_groups))
        return [
            RowGroup(index, group.num_rows, group.total_byte_size)
            for index, group in enumerate(groups)
        ]


def read_row_group(
    file: ResolvedFile | str | os.PathLike[str],
    index: int,
    *,
    columns: Sequence[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> pa.Table:
    """Read one row group of a Parquet file, optionally only some columns.

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        index: The row group's position in the file (0-based).
        columns: Columns to read (default: all).
        storage_options: Passed to the fsspec filesystem.

    Returns:
        The row group as a table.

    Raises:
        RowGroupIndexError: ``index`` is not a row group of the file.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/train.parquet"
        >>> table = pa.table({"id": [1, 2, 3], "text": ["a", "b", "c"]})
        >>> write_batches([table], path, row_group_size=2)
        3
        >>> read_row_group(path, 1, columns=["text"]).to_pylist()
        [{'text': 'c'}]
    """
    url = file_url(file)
    with _open(url, storage_options) as opened:
        _check_row_groups(opened.metadata.num_row_groups, [index], url)
        _check_columns(opened.schema_arrow, columns, url)
        try:
            return opened.read_row_group(
                index, columns=list(columns) if columns is not None else None, use_threads=False
            )
        except Exception as error:
            if not _unreadable(error):
                raise
            raise _corrupt(url, index, error) from error


def _corrupt(url: str, row_group: int, error: Exception) -> MalformedFileError:
    return MalformedFileError(
        f"{url!r} is corrupt: row group {row_group} cannot be read ({str(error).strip()}). "
        "A page whose checksum does not match was changed after it was written; restore "
        "the file from its source and load it again.",
        path=url,
    )


def iter_parquet_batches(
    file: ResolvedFile | str | os.PathLike[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    start_row: int = 0,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    row_groups: Sequence[int] | None = None,
    stats: ReadStats | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Stream a Parquet file's record batches, one row group at a time.

    Only ``columns`` (and the columns ``filters`` needs) are read. Row groups whose
    statistics show that no row can match ``filters`` are not read at all (see
    ``stats.row_groups_read``); the rows of the others are filtered exactly.

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        batch_size: Most rows in a batch.
        start_row: Rows of the output to skip, to resume where a previous reader
            stopped. Without filters, whole row groups before it are skipped unread.
        columns: Columns to read, in this order (default: all).
        filters: DNF like pyarrow's (``[("a", ">", 1)]``, a list of such lists ORed) or
            a ``pyarrow.compute.Expression``.
        row_groups: Read only these row groups, in this order (a shard of the file).
        stats: Updated with the row groups and rows read.
        storage_options: Passed to the fsspec filesystem.

    Returns:
        An iterator of record batches; an empty file (or one that nothing matches)
        yields one empty batch with the schema.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/t.parquet"
        >>> table = pa.table({"id": list(range(1000)), "text": ["x"] * 1000})
        >>> write_batches([table], path, row_group_size=100)
        1000
        >>> stats = ReadStats()
        >>> filters = [("id", ">=", 950)]
        >>> for batch in iter_parquet_batches(path, columns=["id"], filters=filters, stats=stats):
        ...     print(batch.num_rows)
        50
        >>> stats.row_groups_read, stats.row_groups_total
        (1, 10)
    """
    check_positions(batch_size, start_row)
    url = file_url(file)
    expression = to_expression(filters)
    if expression is not None:
        raw = _filtered_batches(
            url, storage_options, expression, columns, row_groups, batch_size, stats
        )
        return finish(raw, source=url, batch_size=batch_size, skip=start_row, stats=stats)
    opened = _open(url, storage_options)
    try:
        _check_columns(opened.schema_arrow, columns, url)
        metadata = opened.metadata
        groups = [metadata.row_group(index).num_rows for index in range(metadata.num_row_groups)]
        selected = list(range(len(groups))) if row_groups is None else list(row_groups)
        _check_row_groups(len(groups), selected, url)
    except BaseException:
        opened.close(force=True)
        raise
    if stats is not None:
        stats.row_groups_total += len(groups)
    skip = start_row
    while selected and groups[selected[0]] <= skip:
        skip -= groups[selected.pop(0)]
    raw = _read_row_groups(
        opened, url, storage_options, selected, groups, columns, batch_size, stats
    )
    return finish(raw, source=url, batch_size=batch_size, skip=skip, stats=stats)


def _read_row_groups(
    opened: pq.ParquetFile,
    url: str,
    storage_options: Mapping[str, Any] | None,
    selected: list[int],
    groups: list[int],
    columns: Sequence[str] | None,
    batch_size: int,
    stats: ReadStats | None,
) -> Iterator[pa.RecordBatch]:
    """The batches of the ``selected`` row groups of ``opened``, which is closed at the end."""
    names = list(columns) if columns is not None else None
    metadata = opened.metadata
    ahead: RowGroupsAhead | None = None

    def read(index: int) -> Iterator[pa.RecordBatch]:
        if ahead is not None:
            return iter(ahead.table(index).to_batches())
        rows = decode_rows(metadata.row_group(index), names, batch_size)
        return opened.iter_batches(
            batch_size=rows, row_groups=[index], columns=names, use_threads=True
        )

    try:
        whole = all(
            decode_rows(metadata.row_group(index), names, batch_size) >= groups[index]
            for index in selected
        )
        if whole and len(selected) > 1 and usable_cores() > 1:
            files = [opened]
            try:
                files.extend(_open(url, storage_options) for _ in range(WORKERS - 1))
                reopen = partial(_open, url, storage_options)
                ahead = RowGroupsAhead(files, selected, names, reopen)
            except BaseException:
                for file in files[1:]:
                    file.close(force=True)
                raise
        yield from _each_row_group(url, selected, groups, read, stats)
        if not selected:
            yield _empty_batch(opened.schema_arrow, names)
    finally:
        if ahead is not None:
            ahead.close()  # closes `opened` too
        else:
            opened.close(force=True)


# Rows are decoded in pieces of about this many bytes (uncompressed), then cut into
# batches: decoding a whole small row group at once lets Arrow's threads split it by
# column, and costs fewer calls; a big row group is still decoded piece by piece.
DECODE_BYTES = 8 << 20
# At most this many batches are decoded at once, whatever the sizes say: a page's
# uncompressed size understates the decoded size of dictionary-encoded strings.
DECODE_BATCHES = 10


def decode_rows(group: pq.RowGroupMetaData, names: Sequence[str] | None, batch_size: int) -> int:
    """How many rows of row group ``group`` to decode at once (columns ``names``, or all).

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import pyarrow.parquet as pq
        >>> path = tempfile.mkdtemp() + "/t.parquet"
        >>> pq.write_table(pa.table({"id": list(range(50_000))}), path)
        >>> decode_rows(pq.ParquetFile(path).metadata.row_group(0), None, 1000)
        10000
    """
    wanted = set(names) if names is not None else None
    size = sum(
        group.column(index).total_uncompressed_size
        for index in range(group.num_columns)
        if wanted is None or group.column(index).path_in_schema.split(".")[0] in wanted
    )
    by_bytes = group.num_rows * DECODE_BYTES // max(size, 1)
    return max(batch_size, min(group.num_rows, by_bytes, batch_size * DECODE_BATCHES))


def _filtered_batches(
    url: str,
    storage_options: Mapping[str, Any] | None,
    expression: Any,
    columns: Sequence[str] | None,
    row_groups: Sequence[int] | None,
    batch_size: int,
    stats: ReadStats | None,
) -> Iterator[pa.RecordBatch]:
    """The rows of the file that match ``expression``: row groups pruned by statistics."""
    fragment = _fragment(url, storage_options)
    _check_columns(fragment.physical_schema, columns, url)
    groups = {group.id: group.num_rows for group in fragment.row_groups}
    selected = list(groups) if row_groups is None else list(row_groups)
    _check_row_groups(fragment.num_row_groups, selected, url)
    if stats is not None:
        stats.row_groups_total += len(groups)
    try:
        pieces = cast(
            "list[ds.ParquetFileFragment]",
            fragment.split_by_row_group(expression, schema=fragment.physical_schema),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        raise InvalidFilterError(
            f"Cannot apply filter {expression} to {url!r} (columns "
            f"{fragment.physical_schema.names!r}): {error}. Fix filters=."
        ) from error
    kept = {piece.row_groups[0].id for piece in pieces}
    matching = [index for index in selected if index in kept]
    names = list(columns) if columns is not None else None
    return _matching_rows(fragment, url, matching, groups, names, expression, batch_size, stats)


def _matching_rows(
    fragment: ds.ParquetFileFragment,
    url: str,
    matching: list[int],
    groups: dict[int, int],
    names: list[str] | None,
    expression: Any,
    batch_size: int,
    stats: ReadStats | None,
) -> Iterator[pa.RecordBatch]:
    def read(index: int) -> Iterator[pa.RecordBatch]:
        subset = cast("ds.ParquetFileFragment", fragment.subset(row_group_ids=[index]))
        return subset.to_batches(
            columns=names, filter=expression, batch_size=batch_size, use_threads=True
        )

    yield from _each_row_group(url, matching, groups, read, stats)
    if not matching:
        yield _empty_batch(fragment.physical_schema, names)


def _each_row_group(
    url: str,
    indices: Sequence[int],
    groups: Sequence[int] | Mapping[int, int],
    read: Callable[[int], Iterator[pa.RecordBatch]],
    stats: ReadStats | None,
) -> Iterator[pa.RecordBatch]:
    """What ``read(index)`` yields for each row group of ``indices``, counted in ``stats``.

    Raises:
        MalformedFileError: A page of a row group does not match its checksum.
    """
    for index in indices:
        if stats is not None:
            stats.row_groups_read += 1
            stats.rows_read += groups[index]
        try:
            yield from read(index)
        except Exception as error:
            if not _unreadable(error):
                raise
            raise _corrupt(url, index, error) from error


def _empty_batch(schema: pa.Schema, names: list[str] | None) -> pa.RecordBatch:
    if names is not None:
        schema = pa.schema([schema.field(name) for name in names])
    return pa.RecordBatch.from_pylist([], schema=schema)


def _check_columns(schema: pa.Schema, columns: Sequence[str] | None, url: str) -> None:
    if columns is None:
        return
    if isinstance(columns, str):
        raise FormatOptionError(f"columns must be a list of names, got the string {columns!r}.")
    missing = [name for name in columns if name not in schema.names]
    if missing:
        raise ColumnNotFoundError(
            f"Column(s) {missing!r} not found in {url!r}, which has columns {schema.names!r}. "
            "Fix columns=."
        )


def _check_row_groups(count: int, indices: Sequence[int], url: str) -> None:
    bad = [index for index in indices if not 0 <= index < count]
    if bad:
        raise RowGroupIndexError(
            f"Row group(s) {bad!r} out of range for {url!r}, which has {count} row group(s) "
            f"(indices 0 to {count - 1}). Take indices from list_row_groups()."
        )
