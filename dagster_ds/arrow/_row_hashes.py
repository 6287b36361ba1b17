"""64-bit hashes of Arrow values and rows, computed over whole columns with numpy.

A diff compares rows as multisets of row hashes. Hashing them one Python
object per row would cost more than the data read, so each column is hashed
from its buffers at once:

- fixed-width values (numbers, dates, decimals, fixed-size binary) by their
  bytes, 8 at a time, through a 64-bit finaliser (MurmurHash3's ``fmix64``);
  floats first made canonical (``-0.0`` is ``0.0``; every NaN is one NaN);
- strings and binaries by a polynomial over their bytes, whose prefix sums
  give every value's hash in a few passes whatever its length, mixed with
  its length;
- lists by the same polynomial over their items' hashes, structs by their
  fields' hashes, dictionaries by their decoded values;
- a null by a constant.

A row's hash combines its columns' hashes in a given order. Equal values hash
equally whatever the chunking. Python objects are made only for the rare
types with no buffer layout (unions), one per value.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from dagster_ds.fingerprint import is_binary_like

Hashes = npt.NDArray[np.uint64]

_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_PRIME = 0x100000001B3  # odd, so it has an inverse modulo 2**64
_NULL = np.uint64(0x9E3779B97F4A7C15)
_ROW_SEED = np.uint64(0x2545F4914F6CDD1D)
# Rows hashed per slice are chosen to keep about this many value bytes in flight: the
# polynomial needs 16 bytes of powers per byte.
_SLICE_BYTES = 4 << 20
_powers: list[Hashes] = [np.ones(1, np.uint64), np.ones(1, np.uint64)]


def fmix(values: Hashes) -> Hashes:
    """MurmurHash3's 64-bit finaliser, element-wise (wrapping arithmetic)."""
    values = values ^ (values >> np.uint64(33))
    values = values * _MIX1
    values = values ^ (values >> np.uint64(33))
    values = values * _MIX2
    return values ^ (values >> np.uint64(33))


def row_hashes(table: pa.Table, columns: Sequence[str]) -> tuple[Hashes, dict[str, Hashes]]:
    """The hash of each row of ``table`` over ``columns`` (in that order), and each column's.

    Example:
        >>> import pyarrow as pa
        >>> rows, _ = row_hashes(pa.table({"a": [1, 2, 1]}), ["a"])
        >>> bool(rows[0] == rows[2]) and bool(rows[0] != rows[1])
        True
    """
    per_column = {name: column_hashes(table.column(name)) for name in columns}
    rows = np.full(table.num_rows, _ROW_SEED, np.uint64)
    for position, name in enumerate(columns):
        salt = fmix(np.array([position + 1], np.uint64))
        rows = fmix(rows * np.uint64(_PRIME) + (per_column[name] ^ salt))
    return rows, per_column


def column_hashes(column: pa.ChunkedArray | pa.Array) -> Hashes:
    """One 64-bit hash per value of ``column`` (nulls hash to a constant)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    size = len(array)
    if size == 0:
        return np.zeros(0, np.uint64)
    step = _rows_per_slice(array)
    if step >= size:
        return _hash_array(array)
    return np.concatenate([_hash_array(array.slice(start, step)) for start in range(0, size, step)])


def _rows_per_slice(array: pa.Array) -> int:
    """How many rows of ``array`` to hash at once to keep its value bytes near _SLICE_BYTES."""
    per_row = max(1, array.nbytes // max(1, len(array)))
    return max(1024, _SLICE_BYTES // per_row)


def _hash_array(array: pa.Array) -> Hashes:
    arrow_type = array.type
    if isinstance(arrow_type, pa.ExtensionType):
        return _hash_array(array.storage)  # pyright: ignore[reportAttributeAccessIssue]
    if pa.types.is_dictionary(arrow_type):
        return _hash_array(array.dictionary_decode())  # pyright: ignore[reportAttributeAccessIssue]
    if pa.types.is_null(arrow_type):
        return np.full(len(array), _NULL, np.uint64)
    if pa.types.is_binary_view(arrow_type) or pa.types.is_string_view(arrow_type):
        return _hash_array(pc.cast(array, pa.large_binary()))
    if pa.types.is_list_view(arrow_type) or pa.types.is_large_list_view(arrow_type):
        value_type = arrow_type.value_type  # pyright: ignore[reportAttributeAccessIssue]
        return _hash_array(pc.cast(array, pa.large_list(value_type)))
    if pa.types.is_boolean(arrow_type):
        hashed = fmix(_filled(pc.cast(array, pa.uint8())).astype(np.uint64) + np.uint64(1))
    elif pa.types.is_floating(arrow_type):
        hashed = _floats(array)
    elif is_binary_like(arrow_type):
        hashed = _binaries(array)
    elif pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        hashed = _lists(array)
    elif pa.types.is_fixed_size_list(arrow_type):
        hashed = _fixed_size_lists(array)
    elif pa.types.is_struct(arrow_type):
        hashed = _structs(array)
    elif _fixed_width(arrow_type):
        hashed = _fixed(array)
    else:  # no buffer layout to hash (unions): one Python object per value
        hashed = np.fromiter(
            (
                xxhash.xxh3_64_intdigest(pickle.dumps(value, protocol=5))
                for value in array.to_pylist()
            ),
            np.uint64,
            len(array),
        )
    if array.null_count:
        hashed = np.where(_filled(array.is_null()).astype(bool), _NULL, hashed)
    return hashed


def _filled(array: pa.Array) -> npt.NDArray[np.generic]:
    """``array`` as numpy, its nulls as zeros."""
    if array.null_count:
        array = array.fill_null(pa.scalar(0, array.type) if array.type != pa.bool_() else False)
    return array.to_numpy(zero_copy_only=False)


def _fixed_width(arrow_type: pa.DataType) -> bool:
    try:
        width = arrow_type.bit_width
    except ValueError:
        return False
    return width % 8 == 0 and width > 0


def _fixed(array: pa.Array) -> Hashes:
    """Hash fixed-width values by their bytes, a word at a time."""
    width = array.type.bit_width // 8
    buffer = array.buffers()[1]
    assert buffer is not None
    raw = np.frombuffer(memoryview(buffer), np.uint8)[
        array.offset * width : (array.offset + len(array)) * width
    ]
    return _words(raw.reshape(len(array), width))


def _words(raw: npt.NDArray[np.uint8]) -> Hashes:
    """Hash each row of a (rows, width) byte matrix, 8 bytes at a time."""
    rows, width = raw.shape
    padded = -width % 8
    if padded:
        raw = np.concatenate([raw, np.zeros((rows, padded), np.uint8)], axis=1)
    words = np.ascontiguousarray(raw).view(np.uint64)
    hashed = np.full(rows, np.uint64(width), np.uint64)
    for index in range(words.shape[1]):
        hashed = fmix(hashed * np.uint64(_PRIME) + words[:, index])
    return hashed


def _floats(array: pa.Array) -> Hashes:
    """Hash floats by value: ``-0.0`` as ``0.0``, every NaN as one NaN."""
    values = _filled(array).astype(np.float64)
    values = np.where(values == 0.0, 0.0, values)
    values = np.where(np.isnan(values), np.nan, values)
    return fmix(np.ascontiguousarray(values).view(np.uint64) ^ np.uint64(0x51ED27))


def _binaries(array: pa.Array) -> Hashes:
    """Hash strings and binaries: a polynomial over their bytes, mixed with their length."""
    large = pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type)
    offset_type = np.int64 if large else np.int32
    buffers = array.buffers()
    offsets_buffer, data_buffer = buffers[1], buffers[2]
    assert offsets_buffer is not None
    offsets = np.frombuffer(memoryview(offsets_buffer), offset_type)[
        array.offset : array.offset + len(array) + 1
    ]
    offsets = offsets.astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = (
        np.frombuffer(memoryview(data_buffer), np.uint8)[first:last]
        if data_buffer is not None and last > first
        else np.zeros(0, np.uint8)
    )
    sums = _segment_sums(data, offsets - first)
    lengths = np.diff(offsets).astype(np.uint64)
    return fmix(sums ^ fmix(lengths + np.uint64(0xB1)))


def _lists(array: pa.Array) -> Hashes:
    """Hash lists: a polynomial over their items' hashes, mixed with their length."""
    offsets = _filled(array.offsets).astype(np.int64)  # pyright: ignore[reportAttributeAccessIssue]
    first, last = int(offsets[0]), int(offsets[-1])
    values: pa.Array = array.values  # pyright: ignore[reportAttributeAccessIssue]
    items = column_hashes(values.slice(first, last - first))
    sums = _segment_sums(items, offsets - first)
    lengths = np.diff(offsets).astype(np.uint64)
    return fmix(sums ^ fmix(lengths + np.uint64(0x1157)))


def _fixed_size_lists(array: pa.Array) -> Hashes:
    size = array.type.list_size  # pyright: ignore[reportAttributeAccessIssue]
    values: pa.Array = array.values  # pyright: ignore[reportAttributeAccessIssue]
    items = column_hashes(values.slice(array.offset * size, len(array) * size))
    if size == 0:
        return np.full(len(array), np.uint64(0xF1), np.uint64)
    return _words(items.reshape(len(array), size).view(np.uint8).reshape(len(array), size * 8))


def _structs(array: pa.Array) -> Hashes:
    hashed = np.full(len(array), np.uint64(0x57), np.uint64)
    for field in array.flatten():  # pyright: ignore[reportAttributeAccessIssue]
        hashed = fmix(hashed * np.uint64(_PRIME) + column_hashes(field))
    return hashed


def _segment_sums(terms: npt.NDArray[Any], bounds: npt.NDArray[np.int64]) -> Hashes:
    """Per segment ``[bounds[i], bounds[i+1])`` of ``terms``: sum of term * P**(j - start).

    Prefix sums of term * P**j give every segment's sum in one pass; dividing by
    P**start (multiplying by its inverse modulo 2**64) makes it independent of
    where the segment starts. ``terms``: bytes or hashes (the lengths, mixed in
    by the callers, tell zero bytes apart).
    """
    if len(terms) == 0:
        return np.zeros(len(bounds) - 1, np.uint64)
    powers, inverses = _powers_upto(len(terms))
    prefix = np.multiply(terms, powers[: len(terms)], dtype=np.uint64)
    np.cumsum(prefix, out=prefix)
    starts, stops = bounds[:-1], bounds[1:]
    before = np.where(starts > 0, prefix[np.maximum(starts - 1, 0)], np.uint64(0))
    through = np.where(stops > 0, prefix[np.maximum(stops - 1, 0)], np.uint64(0))
    return (through - before) * inverses[starts]


def _powers_upto(count: int) -> tuple[Hashes, Hashes]:
    """P**j and P**-j modulo 2**64 for j in 0..count (kept for the next call)."""
    if len(_powers[0]) <= count:
        size = max(count + 1, 2 * len(_powers[0]))
        inverse = pow(_PRIME, -1, 1 << 64)
        powers = np.full(size, np.uint64(_PRIME), np.uint64)
        powers[0] = 1
        inverses = np.full(size, np.uint64(inverse), np.uint64)
        inverses[0] = 1
        _powers[0] = np.cumprod(powers, dtype=np.uint64)
        _powers[1] = np.cumprod(inverses, dtype=np.uint64)
    return _powers[0], _powers[1]
