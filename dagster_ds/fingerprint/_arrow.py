# pyarrow expose untyped or loosely generic APIs; strict mode stays on except for
# the propagation of their unknown types.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false, reportUnknownParameterType=false
# pyright: reportMissingTypeArgument=false
"""Content digests of Arrow data, computed from buffers and independent of chunking.

A column is hashed as a set of byte *streams* (null positions, fixed-width
values, value lengths, value bytes, and the streams of child columns). Each
chunk appends to the streams, so two columns with equal values produce equal
streams however they are split into chunks or sliced. Python objects are made
only for the rare types that have no buffer layout to read (unions).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import xxhash

ArrowData = pa.Table | pa.RecordBatch | pa.Array | pa.ChunkedArray

# Consecutive chunks smaller than this are concatenated before hashing: one
# compute call per few MiB instead of one per tiny chunk, with bounded copies.
_GROUP_BYTES = 4 << 20


class _ColumnStreams:
    """The running hash streams of one column (and, recursively, its children)."""

    def __init__(self, arrow_type: pa.DataType) -> None:
        self.type = _hashable_type(arrow_type)
        self.rows = 0
        self.nulls = xxhash.xxh3_128()
        self.values = xxhash.xxh3_128()
        self.data = xxhash.xxh3_128()
        self.children: list[_ColumnStreams] = [
            _ColumnStreams(child) for child in _child_types(self.type)
        ]

    def feed(self, array: pa.Array) -> None:
        array = _normalise_array(array)
        first_row, self.rows = self.rows, self.rows + len(array)
        if array.null_count:
            positions = pc.indices_nonzero(array.is_null())
            self.nulls.update(_values_buffer(pc.add(positions, pa.scalar(first_row, pa.uint64()))))
            array = array.filter(array.is_valid())
        self._feed_valid(array)

    def _feed_valid(self, array: pa.Array) -> None:
        arrow_type = array.type
        if len(array) == 0 or pa.types.is_null(arrow_type):
            return
        if pa.types.is_boolean(arrow_type):
            self.values.update(_values_buffer(pc.cast(array, pa.uint8())))
        elif _is_binary_like(arrow_type):
            self.values.update(_values_buffer(pc.binary_length(array)))  # pyright: ignore[reportCallIssue, reportArgumentType]
            start, stop = _value_bounds(array)
            data = array.buffers()[2]
            if data is not None and stop > start:
                self.data.update(memoryview(data.slice(start, stop - start)))
        elif pa.types.is_fixed_size_list(arrow_type):
            self.children[0].feed(array.flatten())  # type: ignore[attr-defined]
        elif _is_list_like(arrow_type):
            self.values.update(_values_buffer(pc.list_value_length(array)))
            self.children[0].feed(array.flatten())  # type: ignore[attr-defined]
        elif pa.types.is_struct(arrow_type):
            for child, values in zip(self.children, array.flatten(), strict=True):  # type: ignore[attr-defined]
                child.feed(values)
        elif _has_fixed_width(arrow_type):
            self.values.update(_values_buffer(array))
        else:
            for value in array.to_pylist():
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
    if isinstance(arrow_type, pa.ExtensionType):
        return _hashable_type(arrow_type.storage_type)
    if isinstance(arrow_type, pa.DictionaryType):
        return _hashable_type(arrow_type.value_type)
    if isinstance(arrow_type, pa.RunEndEncodedType):
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


def _normalise_array(array: pa.Array) -> pa.Array:
    """Decode dictionary, run-end, view and extension arrays to plain layouts."""
    if isinstance(array, pa.ExtensionArray):
        return _normalise_array(array.storage)
    if isinstance(array, pa.DictionaryArray):
        return _normalise_array(array.dictionary_decode())
    if pa.types.is_run_end_encoded(array.type):
        return _normalise_array(pc.run_end_decode(array))  # pyright: ignore[reportAttributeAccessIssue]
    target = _hashable_type(array.type)
    if target != array.type:
        return array.cast(target)
    return array


def _child_types(arrow_type: pa.DataType) -> list[pa.DataType]:
    if pa.types.is_struct(arrow_type):
        return [arrow_type.field(i).type for i in range(arrow_type.num_fields)]
    if _is_list_like(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return [arrow_type.value_type]  # type: ignore[attr-defined]
    return []


def _is_binary_like(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
    )


def _is_list_like(arrow_type: pa.DataType) -> bool:
    return pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)


def _has_fixed_width(arrow_type: pa.DataType) -> bool:
    try:
        return arrow_type.bit_width % 8 == 0
    except ValueError:
        return False


def _values_buffer(array: Any) -> memoryview:
    """The bytes of a fixed-width array's values, honouring its offset and length."""
    width = array.type.bit_width // 8
    buffer = array.buffers()[1]
    return memoryview(buffer.slice(array.offset * width, len(array) * width))


def _value_bounds(array: pa.Array) -> tuple[int, int]:
    """Where a binary-like array's values start and stop in its data buffer."""
    width = 8 if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type) else 4
    offsets = memoryview(array.buffers()[1])  # type: ignore[arg-type]
    first, last = array.offset * width, (array.offset + len(array)) * width
    start = int.from_bytes(offsets[first : first + width], "little", signed=True)
    stop = int.from_bytes(offsets[last : last + width], "little", signed=True)
    return start, stop


def _grouped_chunks(chunks: Iterable[pa.Array]) -> Iterator[pa.Array]:
    pending: list[pa.Array] = []
    pending_bytes = 0
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        size = chunk.get_total_buffer_size()
        if size >= _GROUP_BYTES:
            if pending:
                yield pa.concat_arrays(pending)
                pending, pending_bytes = [], 0
            yield chunk
            continue
        pending.append(chunk)
        pending_bytes += size
        if pending_bytes >= _GROUP_BYTES:
            yield pa.concat_arrays(pending)
            pending, pending_bytes = [], 0
    if pending:
        yield pa.concat_arrays(pending) if len(pending) > 1 else pending[0]


def _column_digest(arrow_type: pa.DataType, chunks: Iterable[pa.Array]) -> bytes:
    streams = _ColumnStreams(arrow_type)
    for chunk in _grouped_chunks(chunks):
        streams.feed(chunk)
    return streams.digest()


def arrow_digest(data: ArrowData) -> str:
    """Digest the values of an Arrow table, record batch, array or chunked array.

    Tables and record batches with equal schemas and values share a digest, as
    do arrays and chunked arrays with equal types and values, whatever their
    chunking, slicing or buffer padding. Schema metadata is not part of it.
    """
    digest = xxhash.xxh3_128()
    if isinstance(data, pa.Table | pa.RecordBatch):
        digest.update(b"arrow-table")
        digest.update(data.num_rows.to_bytes(8, "little"))
        for field, column in zip(data.schema, data.columns, strict=True):
            chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
            digest.update(field.name.encode())
            digest.update(b"\0nullable" if field.nullable else b"\0required")
            digest.update(_column_digest(field.type, chunks))
    else:
        chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
        digest.update(b"arrow-array")
        digest.update(_column_digest(data.type, chunks))
    return digest.hexdigest()
