"""The anchor's dtype strings (``"int64"``, ``"timestamp[ms, tz=UTC]"``) and Arrow types.

`dtype_to_arrow` and `arrow_to_dtype` are inverse to each other on canonical
strings: ``dtype_to_arrow(arrow_to_dtype(t)) == t`` for every Arrow type with a
dtype string (dictionary types map to their value type).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from dagster_ds.errors import FeatureError

_SIMPLE: dict[str, Callable[[], pa.DataType]] = {
    "null": pa.null,
    "bool": pa.bool_,
    "int8": pa.int8,
    "int16": pa.int16,
    "int32": pa.int32,
    "int64": pa.int64,
    "uint8": pa.uint8,
    "uint16": pa.uint16,
    "uint32": pa.uint32,
    "uint64": pa.uint64,
    "float16": pa.float16,
    "float32": pa.float32,
    "float64": pa.float64,
    "date32": pa.date32,
    "date64": pa.date64,
    "binary": pa.binary,
    "large_binary": pa.large_binary,
    "binary_view": pa.binary_view,
    "string": pa.string,
    "large_string": pa.large_string,
    "string_view": pa.string_view,
}
# Names pyarrow also accepts for the same types; the anchor normalises the first two.
ALIASES = {
    "float": "float32",
    "double": "float64",
    "halffloat": "float16",
    "bool_": "bool",
    "utf8": "string",
    "large_utf8": "large_string",
}
_TIMESTAMP = re.compile(r"^timestamp\[(s|ms|us|ns)(?:,\s*tz=([a-zA-Z0-9/_+\-:]*))?\]$")
_DURATION = re.compile(r"^duration\[(s|ms|us|ns)\]$")
_TIME = re.compile(r"^time(32|64)\[(s|ms|us|ns)\]$")
_DECIMAL = re.compile(r"^decimal(128|256)\((\d+),\s*(-?\d+)\)$")
_FIXED_BINARY = re.compile(r"^fixed_size_binary\[(\d+)\]$")
_EXAMPLES = (
    "'int64', 'float32', 'string', 'bool', 'timestamp[us]', 'timestamp[ms, tz=UTC]', "
    "'duration[s]', 'time32[ms]', 'time64[ns]', 'decimal128(10, 2)', 'date32', 'binary'"
)


def canonical_dtype(dtype: str) -> str:
    """The canonical spelling of ``dtype`` (``"float"`` becomes ``"float32"``)."""
    return ALIASES.get(dtype, dtype)


def dtype_to_arrow(dtype: str) -> pa.DataType:
    """The Arrow type a dtype string names.

    Raises:
        FeatureError: ``dtype`` names no Arrow type; the message lists valid ones.
    """
    if not isinstance(dtype, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise FeatureError(f"A Value dtype must be a string, got {dtype!r}.")
    dtype = canonical_dtype(dtype)
    simple = _SIMPLE.get(dtype)
    if simple is not None:
        return simple()
    try:
        parsed = _parse_parametrised(dtype)
    except (ValueError, TypeError) as error:  # pyarrow rejects e.g. a bad time zone
        raise FeatureError(f"Invalid dtype {dtype!r}: {error}") from error
    if parsed is not None:
        return parsed
    hint = " Use the Json() feature for JSON objects." if dtype == "json" else ""
    raise FeatureError(f"Unknown dtype {dtype!r}. Valid dtypes include {_EXAMPLES}.{hint}")


def _parse_parametrised(dtype: str) -> pa.DataType | None:
    if match := _TIMESTAMP.match(dtype):
        unit: Any = match.group(1)  # one of the literal units the pattern allows
        tz = match.group(2)
        return pa.timestamp(unit, tz) if tz else pa.timestamp(unit)
    if match := _DURATION.match(dtype):
        duration_unit: Any = match.group(1)
        return pa.duration(duration_unit)
    if match := _TIME.match(dtype):
        bits, time_unit = match.groups()
        allowed = ("s", "ms") if bits == "32" else ("us", "ns")
        if time_unit not in allowed:
            raise ValueError(f"time{bits} takes a unit among {allowed}, not {time_unit!r}")
        checked: Any = time_unit
        return pa.time32(checked) if bits == "32" else pa.time64(checked)
    if match := _DECIMAL.match(dtype):
        bits, precision, scale = match.groups()
        factory = pa.decimal128 if bits == "128" else pa.decimal256
        return factory(int(precision), int(scale))
    if match := _FIXED_BINARY.match(dtype):
        return pa.binary(int(match.group(1)))
    return None


def arrow_to_dtype(arrow_type: pa.DataType) -> str:
    """The dtype string of a primitive Arrow type; dictionaries give their value type's.

    Raises:
        FeatureError: the type has no dtype string (nested, map, union or
            unknown extension types).
    """
    types = pa.types
    if types.is_dictionary(arrow_type):
        return arrow_to_dtype(arrow_type.value_type)  # pyright: ignore[reportAttributeAccessIssue]
    for name, factory in _SIMPLE.items():
        if arrow_type == factory():
            return name
    if types.is_timestamp(arrow_type):
        unit, tz = arrow_type.unit, arrow_type.tz  # pyright: ignore[reportAttributeAccessIssue]
        return f"timestamp[{unit}, tz={tz}]" if tz else f"timestamp[{unit}]"
    if types.is_duration(arrow_type) or types.is_time(arrow_type):
        prefix = "duration" if types.is_duration(arrow_type) else f"time{arrow_type.bit_width}"
        return f"{prefix}[{arrow_type.unit}]"  # pyright: ignore[reportAttributeAccessIssue]
    if types.is_decimal128(arrow_type) or types.is_decimal256(arrow_type):
        bits = 128 if types.is_decimal128(arrow_type) else 256
        precision, scale = arrow_type.precision, arrow_type.scale  # pyright: ignore[reportAttributeAccessIssue]
        return f"decimal{bits}({precision}, {scale})"
    if types.is_fixed_size_binary(arrow_type):
        return f"fixed_size_binary[{arrow_type.byte_width}]"
    raise FeatureError(
        f"Arrow type {arrow_type} has no Value dtype equivalent; cast the column to a "
        "supported type (see Value) before using it."
    )
