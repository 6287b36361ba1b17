"""Arrow IPC files in cache entries: written batch by batch, read memory-mapped."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator

import pyarrow as pa

from dagster_ds.cache import CacheEntry, EntryWriter
from dagster_ds.fingerprint import ColumnDigests

INDICES_FILE = "indices.arrow"
# A new data file is started after this many bytes, so no single file is huge.
_MAX_FILE_BYTES = 512 << 20
# Output tables are gathered into record batches of about this size (a writer holds
# one, and its copy into the file: 8 MiB keeps that small beside a shard).
_FLUSH_ROWS = 65_536
_FLUSH_BYTES = 8 << 20


class TableSink:
    """Writes tables into an entry's ``data-NNNNN.arrow`` files, in record batches of ~64K rows.

    Small tables (a map's output batches) are gathered and written as one
    record batch once they reach `_FLUSH_ROWS` rows or `_FLUSH_BYTES` bytes, so
    files hold few, large batches. A table whose schema differs from the
    current file's (a column that was all null and now has values, say)
    starts a new file; `close` returns the unification of every schema, which
    reading casts to. With ``digests`` set, each record batch written is fed to
    it, so the columns stored are fingerprinted from the buffers in hand.
    """

    def __init__(self, writer: EntryWriter) -> None:
        self._writer = writer
        self._file: io.BufferedIOBase | None = None
        self._ipc: pa.ipc.RecordBatchStreamWriter | None = None
        self._file_schema: pa.Schema | None = None
        self._file_bytes = 0
        self._count = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self.schemas: list[pa.Schema] = []
        self.num_rows = 0
        #: Fed every record batch written (see `FingerprintingSink`), if set.
        self.digests: ColumnDigests | None = None

    def write(self, data: pa.Table | pa.RecordBatch, source: pa.Table | None = None) -> None:
        """Write ``data`` (``source``, the input rows it was made from, is for other sinks)."""
        del source
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        if self._pending and table.schema != self._pending[0].schema:
            self._flush()
        if table.num_rows == 0 and (self._pending or self._ipc is not None):
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        # An upper bound (whole buffers, slices counted in full) that costs no walk of the
        # chunks; the exact size (``nbytes``, slow on many chunks) only when it may be reached.
        self._pending_bytes += table.get_total_buffer_size()
        self.num_rows += table.num_rows
        if self._pending_rows >= _FLUSH_ROWS or (
            self._pending_bytes >= _FLUSH_BYTES
            and sum(pending.nbytes for pending in self._pending) >= _FLUSH_BYTES
        ):
            self._flush()

    def close(self, empty_schema: pa.Schema | None = None) -> pa.Schema:
        """Finish the last file and return the unified schema of everything written."""
        self._flush()
        if self._ipc is None:
            self._open(empty_schema or pa.schema([]))
        self._close_file()
        return pa.unify_schemas(self.schemas, promote_options="permissive")

    def flush(self) -> None:
        """Write the tables gathered so far now (`close` does too)."""
        self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        if (
            self._ipc is None
            or table.schema != self._file_schema
            or self._file_bytes > _MAX_FILE_BYTES
        ):
            self._open(table.schema)
        assert self._ipc is not None
        combined = table.combine_chunks() if table.num_rows else table
        if self.digests is not None:
            self.digests.feed(combined)
        self._ipc.write_table(combined)
        self._file_bytes += combined.nbytes

    def _open(self, schema: pa.Schema) -> None:
        self._close_file()
        self._file = self._writer.open(f"data-{self._count:05d}.arrow")
        self._ipc = pa.ipc.new_stream(self._file, schema)
        self._file_schema = schema
        self._file_bytes = 0
        self._count += 1
        self.schemas.append(schema)

    def _close_file(self) -> None:
        if self._ipc is not None and self._file is not None:
            self._ipc.close()
            self._file.close()
        self._ipc = None
        self._file = None


def write_indices(writer: EntryWriter, indices: pa.Array) -> None:
    """Write an indices mapping (uint64) as the entry's only file."""
    table = pa.table({"indices": indices.cast(pa.uint64())})
    with writer.open(INDICES_FILE) as file, pa.ipc.new_stream(file, table.schema) as ipc:
        ipc.write_table(table)


def read_ipc(data: pa.Buffer) -> pa.Table:
    """The table in an Arrow IPC stream, or in an IPC file (entries of earlier releases).

    Entries are written in the stream format, as `datasets` writes its cache files:
    opening a stream costs a quarter of opening a file (no footer to fetch).
    ``data``: a memory map's buffer reads zero-copy.
    """
    if data[: len(_FILE_MAGIC)].to_pybytes() == _FILE_MAGIC:
        return pa.ipc.open_file(data).read_all()
    return pa.ipc.open_stream(data).read_all()


_FILE_MAGIC = b"ARROW1"


def read_ipc_from(file: io.BufferedIOBase) -> pa.Table:
    """The table in a remote file (stream or file format), read message by message.

    Each record batch is read into a buffer of its own, so the download holds the
    rows and one batch on the way: one ``read()`` of the whole file held it twice at
    least (the file object's read-ahead cache, then the copy it returns).
    """
    if file.read(len(_FILE_MAGIC)) == _FILE_MAGIC:  # the footer is at the end: read it all
        file.seek(0)
        return pa.ipc.open_file(pa.py_buffer(file.read())).read_all()
    file.seek(0)
    return pa.ipc.open_stream(file).read_all()


def data_batches(entry: CacheEntry) -> Iterator[pa.RecordBatch]:
    """The record batches of the entry's data files, in order, each read when reached.

    What `read_table` holds at once, one batch at a time: read from the file when the
    cache is local (not memory-mapped: a map's pages stay resident until it is closed);
    on a remote store, only the batch being read is downloaded (files in the IPC file
    format, of earlier releases, are downloaded whole, one at a time).
    """
    for name in sorted(name for name in entry.files if name.startswith("data-")):
        path = entry.local_path(name)
        if path is not None:
            with pa.OSFile(path, "rb") as source:
                if source.read(len(_FILE_MAGIC)) == _FILE_MAGIC:
                    reader = pa.ipc.open_file(source)
                    yield from (reader.get_batch(i) for i in range(reader.num_record_batches))
                    continue
                source.seek(0)
                yield from pa.ipc.open_stream(source)
            continue
        with entry.open(name) as file:
            if file.read(len(_FILE_MAGIC)) == _FILE_MAGIC:
                file.seek(0)
                yield from read_ipc_from(file).to_batches()
                continue
            file.seek(0)
            yield from pa.ipc.open_stream(file)


def _read_file(entry: CacheEntry, name: str) -> pa.Table:
    path = entry.local_path(name)
    if path is not None:
        return read_ipc(pa.memory_map(path).read_buffer())
    with entry.open(name) as file:
        return read_ipc_from(file)


def read_table(entry: CacheEntry) -> pa.Table:
    """The entry's data files as one table, memory-mapped when the cache is local."""
    names = sorted(name for name in entry.files if name.startswith("data-"))
    tables = [_read_file(entry, name) for name in names]
    return pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]


def read_indices(entry: CacheEntry) -> pa.UInt64Array:
    """The entry's indices mapping."""
    column = _read_file(entry, INDICES_FILE).column("indices")
    indices = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    assert isinstance(indices, pa.UInt64Array)
    return indices


def batches_of(table: pa.Table, batch_size: int) -> Iterable[pa.Table]:
    """Zero-copy slices of ``table`` with ``batch_size`` rows each (the last may be shorter)."""
    for start in range(0, table.num_rows, batch_size):
        yield table.slice(start, batch_size)
