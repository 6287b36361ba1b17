"""One entry point that reads any supported format."""

from __future__ import annotations

import importlib
import inspect
import lzma
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from dagster_ds.errors import FormatOptionError, MalformedFileError, UnknownFormatError
from dagster_ds.formats._batches import DEFAULT_BATCH_SIZE, Filters, ReadStats
from dagster_ds.formats._file import ResolvedFile, file_url
from dagster_ds.formats._infer import FORMATS, infer_compression, infer_format

# Each format's reader, as (module, function): a module is imported when its format is
# first read, so reading Parquet does not import the JSON reader and pyarrow.compute.
_READERS: dict[str, tuple[str, str]] = {
    "arrow": ("dagster_ds.formats._ipc", "iter_arrow_batches"),
    "csv": ("dagster_ds.formats._csv", "iter_csv_batches"),
    "json": ("dagster_ds.formats._json", "iter_json_batches"),
    "parquet": ("dagster_ds.formats._parquet", "iter_parquet_batches"),
    "text": ("dagster_ds.formats._text", "iter_text_batches"),
    "tsv": ("dagster_ds.formats._csv", "iter_csv_batches"),
}
_COMMON = frozenset({"batch_size", "start_row", "columns", "filters", "stats", "storage_options"})


def iter_batches(
    file: ResolvedFile | str | os.PathLike[str],
    format: str | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    start_row: int = 0,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    stats: ReadStats | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> Iterator[pa.RecordBatch]:
    """Stream one file's record batches, in any supported format.

    The shard-level reading primitive: memory stays bounded by a block or a row group
    (whole-JSON documents excepted), every batch holds at most ``batch_size`` rows and
    belongs to one file, and ``start_row`` resumes after the rows already consumed
    (the position a streaming dataset records in its state). The other keywords are
    the chosen reader's (`iter_parquet_batches`, `iter_json_batches`,
    `iter_csv_batches`, `iter_text_batches`, `iter_arrow_batches`).

    Args:
        file: The file (a `ResolvedFile`, path or URL).
        format: ``"parquet"``, ``"json"``, ``"csv"``, ``"tsv"``, ``"text"`` or
            ``"arrow"``; inferred from the extension when None.
        batch_size: Most rows in a batch.
        start_row: Rows of the output to skip, counted after ``filters``.
        columns: Columns to keep, in this order.
        filters: Rows to keep: DNF tuples like pyarrow's, or a
            ``pyarrow.compute.Expression``.
        stats: Updated with the work done (`ReadStats`).
        storage_options: Passed to the fsspec filesystem.
        **options: Options of the format's reader, e.g. ``field=`` for JSON or
            ``delimiter=`` for CSV.

    Returns:
        An iterator of record batches.

    Raises:
        UnknownFormatError: ``format`` is unknown or cannot be inferred.
        FormatOptionError: An option the format's reader does not accept.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/train.jsonl.gz"
        >>> write_batches([pa.table({"id": list(range(25))})], path)
        25
        >>> for batch in iter_batches(path, batch_size=10, start_row=5):
        ...     print(batch["id"][0], batch.num_rows)
        5 10
        15 10
    """
    url = file_url(file)
    fmt = format if format is not None else infer_format(url)
    if fmt not in _READERS:
        raise UnknownFormatError(
            f"Unknown format {fmt!r} for {url!r}; use one of {', '.join(FORMATS)}."
        )
    module, name = _READERS[fmt]
    reader: Callable[..., Iterator[pa.RecordBatch]] = getattr(importlib.import_module(module), name)
    if fmt == "tsv":
        options.setdefault("delimiter", "\t")
    if options:
        accepted = set(inspect.signature(reader).parameters) - _COMMON - {"file"}
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise FormatOptionError(
                f"The {fmt} reader does not accept {', '.join(map(repr, unknown))}; its "
                f"options are {', '.join(sorted(accepted))}."
            )
    batches = reader(
        file,
        batch_size=batch_size,
        start_row=start_row,
        columns=columns,
        filters=filters,
        stats=stats,
        storage_options=storage_options,
        **options,
    )
    codec = infer_compression(url)
    return batches if codec is None else _decompression_errors_named(batches, url, codec)


def _decompression_errors_named(
    batches: Iterator[pa.RecordBatch], url: str, codec: str
) -> Iterator[pa.RecordBatch]:
    """``batches``, with a corrupt or truncated compressed file reported by name."""
    rows = 0
    try:
        for batch in batches:
            rows += batch.num_rows
            yield batch
    except (OSError, EOFError, lzma.LZMAError) as error:
        if isinstance(error, FileNotFoundError | PermissionError | IsADirectoryError):
            raise
        raise MalformedFileError(
            f"{url!r} is not a valid {codec} file, or it is truncated: decompressing failed "
            f"after {rows} rows ({error}). Download or write the file again, or rename it if "
            "it is not compressed.",
            path=url,
        ) from error
