"""One entry point that writes any supported format."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO, cast

import pyarrow as pa

from dagster_ds.errors import FormatOptionError, UnknownFormatError
from dagster_ds.formats._csv_write import CsvWriter
from dagster_ds.formats._infer import FORMATS, infer_format
from dagster_ds.formats._io import is_file_object
from dagster_ds.formats._ipc import ArrowIpcWriter
from dagster_ds.formats._json_write import JsonWriter
from dagster_ds.formats._parquet_write import ParquetWriter
from dagster_ds.formats._sink import BatchWriter
from dagster_ds.formats._text import TextWriter

_WRITERS: dict[str, type[BatchWriter]] = {
    "arrow": ArrowIpcWriter,
    "csv": CsvWriter,
    "json": JsonWriter,
    "parquet": ParquetWriter,
    "text": TextWriter,
    "tsv": CsvWriter,
}


def open_writer(
    url: str | os.PathLike[str] | BinaryIO,
    format: str | None = None,
    *,
    schema: pa.Schema | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> BatchWriter:
    """Open an atomic, incremental writer for a file in any supported format.

    Args:
        url: Target path or fsspec URL; a ``.gz``, ``.bz2``, ``.zst`` or ``.xz``
            suffix compresses CSV, JSON and text output. Or a file object opened
            in binary mode, written in place (not atomically) and left open.
        format: ``"parquet"``, ``"json"``, ``"csv"``, ``"tsv"``, ``"text"`` or
            ``"arrow"``; inferred from the extension when None.
        schema: Schema of the file (default: the first batch's).
        storage_options: Passed to the fsspec filesystem.
        **options: Options of the format's writer: `ParquetWriter` (``row_group_size``,
            ``compression``, ...), `JsonWriter` (``lines``, ``ensure_ascii``),
            `CsvWriter` (``delimiter``, ``header``, ``index``), `TextWriter`
            (``column``), `ArrowIpcWriter` (``file_format``).

    Returns:
        A `BatchWriter`; use it as a context manager, or call ``close()``.

    Raises:
        UnknownFormatError: ``format`` is unknown or cannot be inferred.
        FormatOptionError: An option the format's writer does not accept.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> path = tempfile.mkdtemp() + "/train.jsonl.gz"
        >>> with open_writer(path, lines=True) as writer:
        ...     for batch in pa.table({"id": [1, 2, 3]}).to_batches(max_chunksize=2):
        ...         writer.write(batch)
        >>> type(writer).__name__, writer.rows_written
        ('JsonWriter', 3)
    """
    if is_file_object(url):
        path = str(getattr(url, "name", "<file object>"))
        if format is None and not isinstance(getattr(url, "name", None), str):
            raise UnknownFormatError(
                f"Cannot infer the format of the file object {url!r}; pass format=..."
            )
    else:
        path = os.fspath(cast("str | os.PathLike[str]", url))
    fmt = format if format is not None else infer_format(path)
    writer = _WRITERS.get(fmt)
    if writer is None:
        raise UnknownFormatError(
            f"Unknown format {fmt!r} for {path!r}; use one of {', '.join(FORMATS)}."
        )
    if fmt == "tsv":
        options.setdefault("delimiter", "\t")
    parameters = inspect.signature(writer.__init__).parameters
    accepted = {name for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY}
    if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise FormatOptionError(
                f"The {fmt} writer does not accept {', '.join(map(repr, unknown))}; its "
                f"options are {', '.join(sorted(accepted - {'schema', 'storage_options'}))}."
            )
    target = url if is_file_object(url) else path
    return writer(target, schema=schema, storage_options=storage_options, **options)


def write_batches(
    batches: Iterable[pa.RecordBatch | pa.Table],
    url: str | os.PathLike[str] | BinaryIO,
    format: str | None = None,
    *,
    schema: pa.Schema | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> int:
    r"""Write record batches (or tables) to one file, atomically; return the rows written.

    Memory stays bounded by one batch (one row group for Parquet). If iterating
    ``batches`` or writing fails, no file appears at ``url``.

    Args:
        batches: The batches, consumed once.
        url: Target path or fsspec URL.
        format: The format; inferred from the extension when None.
        schema: Schema of the file (default: the first batch's).
        storage_options: Passed to the fsspec filesystem.
        **options: Options of the format's writer (see `open_writer`).

    Returns:
        The number of rows written.

    Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with open(folder + "/in.csv", "w") as file:
        ...     _ = file.write("id,text\n1,a\n2,b\n3,c\n")
        >>> write_batches(iter_batches(folder + "/in.csv"), folder + "/train.parquet")
        3
    """
    with open_writer(
        url, format, schema=schema, storage_options=storage_options, **options
    ) as writer:
        for batch in batches:
            writer.write(batch)
    return writer.rows_written
