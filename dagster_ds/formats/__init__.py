"""Readers and writers over fsspec, on Arrow record batches.

Resolve ``data_files`` to concrete files, read any file as a stream of bounded
record batches (resumable from a row position), write batches to any fsspec URL
atomically, and fingerprint source files.

Example:
    >>> import tempfile
    >>> import pyarrow as pa
    >>> from dagster_ds.formats import iter_batches, resolve_data_files, write_batches
    >>> folder = tempfile.mkdtemp()
    >>> write_batches([pa.table({"text": ["a", "b"]})], folder + "/train-0.jsonl.gz")
    2
    >>> write_batches([pa.table({"text": ["c"]})], folder + "/train-1.jsonl.gz")
    1
    >>> files = resolve_data_files({"train": "train-*.jsonl.gz"}, base_path=folder)["train"]
    >>> write_batches(
    ...     (batch for file in files for batch in iter_batches(file)), folder + "/train.parquet"
    ... )
    3

The readers and writers of each format are imported at the first use of one of their
names: a process that reads its splits from the cache does not load them.
"""

import typing as _typing

from dagster_ds.exports import lazy_exports as _lazy_exports
from dagster_ds.formats._batches import DEFAULT_BATCH_SIZE as DEFAULT_BATCH_SIZE
from dagster_ds.formats._batches import Filters as Filters
from dagster_ds.formats._batches import ReadStats as ReadStats
from dagster_ds.formats._file import ResolvedFile as ResolvedFile
from dagster_ds.formats._fingerprint import fingerprint_each_file as fingerprint_each_file
from dagster_ds.formats._fingerprint import fingerprint_files as fingerprint_files
from dagster_ds.formats._infer import FORMATS as FORMATS
from dagster_ds.formats._infer import infer_compression as infer_compression
from dagster_ds.formats._infer import infer_format as infer_format
from dagster_ds.formats._io import is_file_object as is_file_object

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.formats._json_depth import DEFAULT_MAX_DEPTH as DEFAULT_MAX_DEPTH
from dagster_ds.formats._json_depth import nesting_depth as nesting_depth
from dagster_ds.formats._resolve import DataFiles as DataFiles
from dagster_ds.formats._resolve import resolve_data_files as resolve_data_files

if _typing.TYPE_CHECKING:
    from dagster_ds.formats._csv import iter_csv_batches as iter_csv_batches
    from dagster_ds.formats._csv_write import CsvWriter as CsvWriter
    from dagster_ds.formats._ipc import ArrowIpcWriter as ArrowIpcWriter
    from dagster_ds.formats._ipc import iter_arrow_batches as iter_arrow_batches
    from dagster_ds.formats._json import iter_json_batches as iter_json_batches
    from dagster_ds.formats._json_write import JsonWriter as JsonWriter
    from dagster_ds.formats._parquet import RowGroup as RowGroup
    from dagster_ds.formats._parquet import iter_parquet_batches as iter_parquet_batches
    from dagster_ds.formats._parquet import list_row_groups as list_row_groups
    from dagster_ds.formats._parquet import read_parquet_schema as read_parquet_schema
    from dagster_ds.formats._parquet import read_row_group as read_row_group
    from dagster_ds.formats._parquet_write import ParquetWriter as ParquetWriter
    from dagster_ds.formats._read import iter_batches as iter_batches
    from dagster_ds.formats._sink import BatchWriter as BatchWriter
    from dagster_ds.formats._text import TextWriter as TextWriter
    from dagster_ds.formats._text import iter_text_batches as iter_text_batches
    from dagster_ds.formats._write import open_writer as open_writer
    from dagster_ds.formats._write import write_batches as write_batches

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "FORMATS",
    "ArrowIpcWriter",
    "BatchWriter",
    "CsvWriter",
    "DataFiles",
    "Filters",
    "JsonWriter",
    "ParquetWriter",
    "ReadStats",
    "ResolvedFile",
    "RowGroup",
    "TextWriter",
    "fingerprint_files",
    "infer_compression",
    "infer_format",
    "iter_arrow_batches",
    "iter_batches",
    "iter_csv_batches",
    "iter_json_batches",
    "iter_parquet_batches",
    "iter_text_batches",
    "list_row_groups",
    "open_writer",
    "read_parquet_schema",
    "read_row_group",
    "resolve_data_files",
    "write_batches",
]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "DEFAULT_MAX_DEPTH",
    "fingerprint_each_file",
    "is_file_object",
    "nesting_depth",
]

#: Names imported at their first use, each from its module.
_LAZY = {
    "iter_csv_batches": "dagster_ds.formats._csv",
    "CsvWriter": "dagster_ds.formats._csv_write",
    "ArrowIpcWriter": "dagster_ds.formats._ipc",
    "iter_arrow_batches": "dagster_ds.formats._ipc",
    "iter_json_batches": "dagster_ds.formats._json",
    "JsonWriter": "dagster_ds.formats._json_write",
    "RowGroup": "dagster_ds.formats._parquet",
    "iter_parquet_batches": "dagster_ds.formats._parquet",
    "list_row_groups": "dagster_ds.formats._parquet",
    "read_parquet_schema": "dagster_ds.formats._parquet",
    "read_row_group": "dagster_ds.formats._parquet",
    "ParquetWriter": "dagster_ds.formats._parquet_write",
    "iter_batches": "dagster_ds.formats._read",
    "BatchWriter": "dagster_ds.formats._sink",
    "TextWriter": "dagster_ds.formats._text",
    "iter_text_batches": "dagster_ds.formats._text",
    "open_writer": "dagster_ds.formats._write",
    "write_batches": "dagster_ds.formats._write",
}


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY)
