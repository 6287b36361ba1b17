"""Casts of one primitive Arrow array, checked so that no value changes silently.

Arrow's safe cast already refuses overflow, float truncation, unparseable
strings and coarser time units. On top of it, these casts are checked because
Arrow performs them silently with loss: numbers to ``bool`` (only 0 and 1 are
allowed), floats to a narrower float (finite values must stay finite), floats
to decimals and timestamps to dates (the value must survive the way back).
The first offending row is found by bisection over zero-copy slices, so no
Python objects are made unless a cast fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, overload

import pyarrow as pa

from dagster_ds.errors import CastError

_FLOAT_WIDTH = {
    "float16": 16,
    "float32": 32,
    "float64": 64,
    "halffloat": 16,
    "float": 32,
    "double": 64,
}

# pyarrow.compute is imported where it is used (its import generates the compute
# functions: about 40 ms), and bound as ``pc: Any``: their stubs reject scalar
# arguments (``pc.less(array, 3)``) that pyarrow accepts.


@dataclass(frozen=True)
class Where:
    """Where an array sits: its column path and how its indices map to table rows."""

    column: str
    rows: Callable[[int], int]

    def field(self, name: str) -> Where:
        return Where(f"{self.column}.{name}", self.rows)

    def items(self, offsets: pa.Array) -> Where:
        """The items of a list array whose list ``r`` spans ``offsets[r]:offsets[r+1]``."""
        import pyarrow.compute

        pc: Any = pyarrow.compute

        def row(index: int) -> int:
            owner = pc.sum(pc.less_equal(offsets, index)).as_py() - 1  # pyright: ignore[reportAttributeAccessIssue]
            return self.rows(owner)

        return Where(f"{self.column}[]", row)


_ArrayCast = Callable[[pa.Array, Where], pa.Array]
"""Casts one array; errors say where it sits."""


@overload
def per_chunk(
    array: pa.Array, column: str, target: Callable[[], pa.DataType], cast: _ArrayCast
) -> pa.Array: ...
@overload
def per_chunk(
    array: pa.ChunkedArray, column: str, target: Callable[[], pa.DataType], cast: _ArrayCast
) -> pa.ChunkedArray: ...
@overload
def per_chunk(
    array: pa.Array | pa.ChunkedArray,
    column: str,
    target: Callable[[], pa.DataType],
    cast: _ArrayCast,
) -> pa.Array | pa.ChunkedArray: ...
def per_chunk(
    array: pa.Array | pa.ChunkedArray,
    column: str,
    target: Callable[[], pa.DataType],
    cast: _ArrayCast,
) -> pa.Array | pa.ChunkedArray:
    """``cast`` applied to an array, or to each chunk of a chunked array (of type ``target()``).

    Errors name the column ``column`` and count rows across the chunks.
    """
    if isinstance(array, pa.ChunkedArray):
        chunks: list[pa.Array] = []
        start = 0
        for chunk in array.chunks:
            chunks.append(cast(chunk, Where(column, lambda index, s=start: s + index)))
            start += len(chunk)
        return pa.chunked_array(chunks, type=target())  # pyright: ignore[reportCallIssue, reportArgumentType]
    return cast(array, Where(column, lambda index: index))


def nulls(length: int, kind: pa.DataType) -> pa.Array:
    """An all-null array of any type (the stubs only allow some types)."""
    return pa.nulls(length, type=kind)  # pyright: ignore[reportCallIssue, reportArgumentType]


def describe(kind: object) -> str:
    text = str(kind)
    return text if len(text) <= 120 else text[:117] + "..."


def type_error(array: pa.Array, target: object, where: Where, reason: str, hint: str) -> CastError:
    """A cast that fails for the types, whatever the values."""
    source = describe(array.type)
    prefix = f"Cannot cast column {where.column!r} from {source} to {describe(target)}"
    return CastError(
        f"{prefix}: {reason}. {hint}",
        column=where.column,
        source=source,
        target=describe(target),
    )


def value_error(
    array: pa.Array, index: int, target: object, where: Where, reason: str, hint: str
) -> CastError:
    """A cast that fails for one value: names its table row and shows the value."""
    source = describe(array.type)
    value = array[index].as_py()
    row = where.rows(index)
    return CastError(
        f"Cannot cast column {where.column!r} from {source} to {describe(target)}: row {row} "
        f"has value {value!r}, {reason}. {hint}",
        column=where.column,
        source=source,
        target=describe(target),
        row=row,
        value=value,
    )


def first_true(mask: pa.Array) -> int:
    """The index of the first true value of a boolean array (nulls count as false), or -1."""
    import pyarrow.compute

    pc: Any = pyarrow.compute
    found: int = pc.index(pc.fill_null(mask, False), True).as_py()  # pyright: ignore[reportAssignmentType]
    return found


def first_failure(array: pa.Array, attempt: Callable[[pa.Array], object]) -> int:
    """The first index at which ``attempt`` raises ArrowInvalid; it must fail on ``array``."""
    low, high = 0, len(array)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            attempt(array.slice(low, middle - low))
        except pa.ArrowInvalid:
            high = middle
        else:
            low = middle
    return low


def _hint(source: pa.DataType, target: pa.DataType, column: str) -> str:
    types = pa.types
    if types.is_string(source) or types.is_large_string(source) or types.is_string_view(source):
        return f"Every value must parse as {target}; clean the column with a map first."
    if types.is_boolean(target):
        return (
            f"Only 0 and 1 (or null) convert to bool without loss; map the column first, "
            f"e.g. lambda x: {{{column!r}: x[{column!r}] != 0}}."
        )
    if types.is_integer(target) and (types.is_floating(source) or types.is_decimal(source)):
        return f"Values must be integral and fit in {target}; round them in a map first."
    if types.is_integer(target):
        return f"The value does not fit in {target}; choose a wider type or map the column first."
    return "Map the column first so that every value converts, or choose a type that holds it."


def cast_primitive(array: pa.Array, target: pa.DataType, where: Where) -> pa.Array:
    """Cast a non-nested array to a non-nested type, refusing any silent loss."""
    import pyarrow.compute

    pc: Any = pyarrow.compute
    source = array.type
    if source == target:
        return array
    if pa.types.is_null(source):
        return nulls(len(array), target)
    if pa.types.is_null(target):
        if array.null_count == len(array):
            return nulls(len(array), target)
        index = first_true(pc.is_valid(array))
        raise value_error(
            array,
            index,
            target,
            where,
            "and only nulls fit in null",
            "Drop the column or keep its type.",
        )
    try:
        result = array.cast(target, safe=True)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        raise type_error(
            array,
            target,
            where,
            "Arrow has no conversion between these types",
            f"Map the column first (Dataset.map) to produce {target} values.",
        ) from error
    except pa.ArrowInvalid as error:
        index = first_failure(array, lambda part: part.cast(target, safe=True))
        try:
            array.slice(index, 1).cast(target, safe=True)
        except pa.ArrowInvalid as single:
            reason = str(single).split("\n")[0]
        else:  # not a per-value failure: report Arrow's reason without a row
            raise type_error(
                array, target, where, str(error).split("\n")[0], _hint(source, target, where.column)
            ) from error
        raise value_error(
            array,
            index,
            target,
            where,
            f"which does not convert ({reason})",
            _hint(source, target, where.column),
        ) from error
    lossy = _lossy(array, result, target)
    if lossy is not None:
        index = first_true(lossy)
        if index >= 0:
            converted = result[index].as_py()
            raise value_error(
                array,
                index,
                target,
                where,
                f"which would become {converted!r}",
                _hint(source, target, where.column),
            )
    return result


def _lossy(array: pa.Array, result: pa.Array, target: pa.DataType) -> pa.Array | None:
    """A mask of the values Arrow changed silently, or None when the cast cannot lose any."""
    import pyarrow.compute

    pc: Any = pyarrow.compute
    source = array.type
    types = pa.types
    numeric = types.is_integer(source) or types.is_floating(source) or types.is_decimal(source)
    if types.is_boolean(target) and numeric:
        # Decimals compare as floats: a decimal type may be too narrow to hold 1.
        values = array.cast(pa.float64(), safe=False) if types.is_decimal(source) else array
        allowed = pa.array([0, 1]).cast(values.type)
        return pc.and_(pc.is_valid(values), pc.invert(pc.is_in(values, value_set=allowed)))
    if types.is_floating(source) and types.is_floating(target):
        if _FLOAT_WIDTH[str(target)] < _FLOAT_WIDTH[str(source)]:
            return pc.and_(pc.is_finite(array), pc.invert(pc.is_finite(result)))
        return None
    round_trip = (types.is_floating(source) and types.is_decimal(target)) or (
        (types.is_timestamp(source) or types.is_date64(source))
        and (types.is_date32(target) or types.is_date64(target))
    )
    if round_trip:
        return pc.not_equal(result.cast(source), array)
    return None
