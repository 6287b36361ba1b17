# pyarrow exposes untyped or loosely generic APIs; strict mode stays on except for
# the propagation of their unknown types.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false, reportUnknownParameterType=false
# pyright: reportMissingTypeArgument=false
"""Content digests of Arrow data, computed from buffers and independent of chunking.

A column is hashed as a set of byte *streams* (null positions, fixed-width
values, value lengths, value bytes, and the streams of child columns). Chunks
append to the streams in order, so equal values produce equal streams however
they are split into chunks or sliced. Compute kernels run over runs of chunks
at once (a window of about 64 MB); small chunks are first concatenated into one
array, so Python feeds xxh3 a few buffers per window, not a few per tiny chunk,
while large chunks are hashed in place (no copy).
Python objects are made only for the rare types with no buffer layout (unions).
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Iterable, Iterator

import pyarrow as pa
import xxhash

ArrowData = pa.Table | pa.RecordBatch | pa.Array | pa.ChunkedArray

# A window of consecutive chunks handed to compute kernels at once: large enough
# to amortise per-call overhead, small enough to bound the copies that dropping
# nulls, decoding dictionaries or joining chunks makes. Hashing holds a window
# and its copy: 8 MiB (a cache entry's record batch) hashes as fast as 64 MiB did.
_WINDOW_BYTES = 8 << 20
# Chunks smaller than this on average are combined into one before hashing; larger
# ones are hashed where they are: copying them costs more than the hash (the kernel
# zeroes each new page), e.g. 0.03-0.13 s of system time for a 50 MB text column.
_COMBINE_BELOW = 256 << 10


class _ColumnStreams:
    """The running hash streams of one column (and, recursively, its children)."""

    def __init__(self, arrow_type: pa.DataType) -> None:
        self.type = _hashable_type(arrow_type)
        self.rows = 0
        self.nulls = xxhash.xxh3_128()
        self.values = xxhash.xxh3_128()
        self.data = xxhash.xxh3_128()
        self.children = [_ColumnStreams(child) for child in _child_types(self.type)]

    def feed(self, column: pa.ChunkedArray) -> None:
        """Append the values of ``column`` (whose type is ``self.type`` once normalised)."""
        import pyarrow.compute as pc

        column = _normalise(column)
        if column.num_chunks > 1 and column.get_total_buffer_size() < (
            column.num_chunks * _COMBINE_BELOW
        ):  # many small chunks: one buffer per stream, no Python work per chunk
            column = pa.chunked_array([column.combine_chunks()], column.type)
        first_row, self.rows = self.rows, self.rows + len(column)
        if column.null_count:
            positions = pc.add(
                pc.indices_nonzero(column.is_null()), pa.scalar(first_row, pa.uint64())
            )
            _update_values(self.nulls, positions)
            column = column.filter(column.is_valid())
        if len(column) == 0 or pa.types.is_null(self.type):
            return
        arrow_type = self.type
        if pa.types.is_boolean(arrow_type):
            _update_values(self.values, pc.cast(column, pa.uint8()))
        elif is_binary_like(arrow_type):
            _update_values(self.values, pc.binary_length(column))  # pyright: ignore[reportCallIssue, reportArgumentType]
            offset_format = "<q" if _has_large_offsets(arrow_type) else "<i"
            for chunk in column.chunks:
                start, stop = _value_bounds(chunk, offset_format)
                data = chunk.buffers()[2]
                if data is not None and stop > start:
                    self.data.update(memoryview(data.slice(start, stop - start)))
        elif pa.types.is_fixed_size_list(arrow_type):
            self.children[0].feed(pc.list_flatten(column))  # pyright: ignore[reportArgumentType]
        elif pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
            _update_values(self.values, pc.list_value_length(column))
            self.children[0].feed(pc.list_flatten(column))  # pyright: ignore[reportArgumentType]
        elif pa.types.is_struct(arrow_type):
            for child, values in zip(self.children, column.flatten(), strict=True):
                child.feed(values)
        elif _has_fixed_width(arrow_type):
            _update_values(self.values, column)
        else:
            for value in column.to_pylist():
                self.values.update(pickle.dumps(value, protocol=4))

    def digest(self) -> bytes:
        combined = xxhash.xxh3_128()
        combined.update(str(self.type).encode())
        combined.update(self.rows.to_bytes(8, "little"))
        for stream in (self.nulls, self.values, self.data):
            combined.update(stream.digest())
        for child in self.children:
            combined.update(child.digest())
        return combined.digest()


def _hashable_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type whose buffers are hashed: encodings are decoded to their values."""
    if isinstance(arrow_type, pa.BaseExtensionType):
        return _hashable_type(arrow_type.storage_type)
    if isinstance(arrow_type, pa.DictionaryType | pa.RunEndEncodedType):
        return _hashable_type(arrow_type.value_type)
    if isinstance(arrow_type, pa.MapType):
        entries = pa.struct([arrow_type.key_field, arrow_type.item_field])
        return pa.list_(pa.field("entries", entries, nullable=False))
    if pa.types.is_string_view(arrow_type):
        return pa.large_string()
    if pa.types.is_binary_view(arrow_type):
        return pa.large_binary()
    if pa.types.is_list_view(arrow_type):
        return pa.list_(arrow_type.value_field)
    if pa.types.is_large_list_view(arrow_type):
        return pa.large_list(arrow_type.value_field)
    return arrow_type


def _normalise(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Decode dictionary, run-end, view and extension columns to plain layouts."""
    import pyarrow.compute as pc

    if isinstance(column.type, pa.BaseExtensionType):
        storage = [chunk.storage for chunk in column.chunks]  # pyright: ignore[reportAttributeAccessIssue]
        return _normalise(pa.chunked_array(storage, column.type.storage_type))  # pyright: ignore[reportCallIssue, reportArgumentType]
    if pa.types.is_run_end_encoded(column.type):
        return _normalise(pc.run_end_decode(column))  # pyright: ignore[reportAttributeAccessIssue]
    target = _hashable_type(column.type)
    return column.cast(target) if target != column.type else column


def _child_types(arrow_type: pa.DataType) -> list[pa.DataType]:
    if pa.types.is_struct(arrow_type):
        return [arrow_type.field(i).type for i in range(arrow_type.num_fields)]
    if (
        pa.types.is_list(arrow_type)
        or pa.types.is_large_list(arrow_type)
        or pa.types.is_fixed_size_list(arrow_type)
    ):
        return [arrow_type.value_type]
    return []


def is_binary_like(arrow_type: pa.DataType) -> bool:
    """Whether ``arrow_type`` holds variable-length bytes (string or binary, large or not)."""
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
    )


def _has_fixed_width(arrow_type: pa.DataType) -> bool:
    try:
        return arrow_type.bit_width % 8 == 0
    except ValueError:
        return False


def _update_values(stream: xxhash.xxh3_128, column: pa.ChunkedArray | pa.Array) -> None:
    """Feed the value bytes of a fixed-width column, honouring offsets and lengths."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    for chunk in chunks:
        if len(chunk):
            width = chunk.type.bit_width // 8
            buffer = chunk.buffers()[1]
            if buffer is not None:
                stream.update(memoryview(buffer.slice(chunk.offset * width, len(chunk) * width)))


def _has_large_offsets(arrow_type: pa.DataType) -> bool:
    return pa.types.is_large_string(arrow_type) or pa.types.is_large_binary(arrow_type)


def _value_bounds(array: pa.Array, offset_format: str) -> tuple[int, int]:
    """Where a binary-like array's values start and stop in its data buffer."""
    offsets = array.buffers()[1]
    width = struct.calcsize(offset_format)
    (start,) = struct.unpack_from(offset_format, offsets, array.offset * width)  # type: ignore[arg-type]
    (stop,) = struct.unpack_from(offset_format, offsets, (array.offset + len(array)) * width)  # type: ignore[arg-type]
    return start, stop


def _windows(column: pa.ChunkedArray) -> Iterator[pa.ChunkedArray]:
    """Runs of consecutive chunks of at most about `_WINDOW_BYTES` each.

    Sizes count whole buffers (`get_total_buffer_size`, cheap), not the bytes a slice
    references (`nbytes`, which costs a scan per chunk): slices only make windows smaller.
    """
    if column.get_total_buffer_size() <= _WINDOW_BYTES:
        yield column
        return
    window: list[pa.Array] = []
    size = 0
    for chunk in column.chunks:
        window.append(chunk)
        size += chunk.get_total_buffer_size()
        if size >= _WINDOW_BYTES:
            yield pa.chunked_array(window, column.type)
            window, size = [], 0
    if window:
        yield pa.chunked_array(window, column.type)


def _column_digest(column: pa.ChunkedArray) -> bytes:
    streams = _ColumnStreams(column.type)
    for window in _windows(column):
        streams.feed(window)
    return streams.digest()


def _as_chunked(column: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    return (
        column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column], column.type)
    )


class ColumnDigests:
    """The `arrow_digest` of each column of the tables fed, in order, as of the whole columns.

    A column whose type changes between tables, or that some table lacks, has none.

    Example:
        >>> digests = ColumnDigests()
        >>> digests.feed(pa.table({"a": [1]}))
        >>> digests.feed(pa.table({"a": [2]}))
        >>> digests.hexdigests()["a"] == arrow_digest(pa.array([1, 2]))
        True
    """

    def __init__(self) -> None:
        self._streams: dict[str, tuple[pa.DataType, _ColumnStreams]] | None = None
        # Small tables fed but not hashed yet: hashed a window at a time (per-call costs add up).
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._rows = 0

    def feed(self, table: pa.Table | pa.RecordBatch) -> None:
        """Append the rows of ``table``."""
        data = table if isinstance(table, pa.Table) else pa.Table.from_batches([table])
        if self._pending and not data.schema.equals(self._pending[0].schema):
            self._flush()
        size = data.get_total_buffer_size()
        self._pending.append(data)
        self._pending_bytes += size
        self._rows += data.num_rows
        # Large tables are hashed at once (not held until a window fills): their chunks
        # are hashed in place, and the caller may free them.
        if self._pending_bytes >= _WINDOW_BYTES or size >= _COMBINE_BELOW * data.num_columns:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        pending = self._pending
        table = pa.concat_tables(pending) if len(pending) > 1 else pending[0]
        self._pending, self._pending_bytes = [], 0
        self._hash(table)

    def _hash(self, table: pa.Table) -> None:
        names = set(table.schema.names)
        if self._streams is None:
            self._streams = {}
            for field in table.schema:
                self._streams[field.name] = (field.type, _ColumnStreams(field.type))
        for name in [name for name in self._streams if name not in names]:
            del self._streams[name]
        for field, column in zip(table.schema, table.columns, strict=True):
            known = self._streams.get(field.name)
            if known is None:
                continue
            if not known[0].equals(field.type):
                del self._streams[field.name]
                continue
            for window in _windows(_as_chunked(column)):
                known[1].feed(window)

    def hexdigests(self) -> dict[str, str]:
        """Each column's digest (the same as ``arrow_digest`` of the whole column)."""
        self._flush()
        found: dict[str, str] = {}
        for name, (_, streams) in (self._streams or {}).items():
            digest = xxhash.xxh3_128()
            digest.update(b"arrow-array")
            digest.update(streams.digest())
            found[name] = digest.hexdigest()
        return found

    def table_hexdigest(self, schema: pa.Schema) -> str | None:
        """The ``arrow_digest`` of the table of every row fed, whose schema is ``schema``.

        None when a column of ``schema`` has no digest (no rows of it were fed, or its
        type changed). Tables fed a batch at a time are hashed in bounded memory.

        Example:
            >>> digests = ColumnDigests()
            >>> digests.feed(pa.table({"a": [1]}))
            >>> digests.feed(pa.table({"a": [2]}))
            >>> table = pa.table({"a": [1, 2]})
            >>> digests.table_hexdigest(table.schema) == arrow_digest(table)
            True
        """
        self._flush()
        streams = self._streams or {}
        columns: list[tuple[pa.Field, bytes]] = []
        for field in schema:
            known = streams.get(field.name)
            if known is None or not known[0].equals(field.type):
                return None
            columns.append((field, known[1].digest()))
        return _table_digest(self._rows, columns)


def arrow_digest(data: ArrowData) -> str:
    """Digest the values of an Arrow table, record batch, array or chunked array.

    Tables and record batches with equal schemas and values share a digest, as
    do arrays and chunked arrays with equal types and values, whatever their
    chunking, slicing or buffer padding. Schema metadata is not part of it.
    """
    if isinstance(data, pa.Table | pa.RecordBatch):
        columns = zip(data.schema, data.columns, strict=True)
        digests = ((field, _column_digest(_as_chunked(column))) for field, column in columns)
        return _table_digest(data.num_rows, digests)
    digest = xxhash.xxh3_128()
    digest.update(b"arrow-array")
    digest.update(_column_digest(_as_chunked(data)))
    return digest.hexdigest()


def _table_digest(num_rows: int, columns: Iterable[tuple[pa.Field, bytes]]) -> str:
    """A table's digest from its row count and each field with its column's digest."""
    digest = xxhash.xxh3_128()
    digest.update(b"arrow-table")
    digest.update(num_rows.to_bytes(8, "little"))
    for field, column in columns:
        digest.update(field.name.encode())
        digest.update(b"\0nullable" if field.nullable else b"\0required")
        digest.update(column)
    return digest.hexdigest()
