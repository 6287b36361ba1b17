"""Rendering Arrow columns as text, column-wise, for the CSV and text writers."""

from __future__ import annotations

import re
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

# Values the CSV reader (like pandas) reads as null when unquoted; written quoted.
NULL_TOKENS = (
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
)


def large(text: str) -> pa.Scalar:
    """A large_string scalar, to combine with large_string columns."""
    return pa.scalar(text, pa.large_string())


def join(*strings: pa.Array | pa.Scalar, separator: str) -> pa.Array:
    """Element-wise concatenation of string columns and scalars, with a separator."""
    joined: Any = pc.binary_join_element_wise(*strings, large(separator))  # pyright: ignore[reportCallIssue, reportArgumentType]
    return joined


def unsupported(type_: pa.DataType) -> bool:
    """Whether a type has no flat text form (nested or binary)."""
    if pa.types.is_dictionary(type_):
        return unsupported(type_.value_type)
    return (
        pa.types.is_nested(type_)
        or pa.types.is_binary(type_)
        or pa.types.is_large_binary(type_)
        or pa.types.is_fixed_size_binary(type_)
        or pa.types.is_binary_view(type_)
    )


def render(column: pa.Array, delimiter: str, quote_char: str = '"') -> pa.Array:
    """A large_string column with each value as the anchor (pandas) writes it to CSV.

    Nulls and NaN become empty fields, booleans ``True``/``False``, integral floats keep
    a ``.0``; strings are quoted when they hold the delimiter, a quote or a line break,
    or would otherwise read back as null.
    """
    if pa.types.is_dictionary(column.type):
        column = cast(pa.DictionaryArray, column).dictionary_decode()
    kind = column.type
    if pa.types.is_boolean(kind):
        text = pc.if_else(column, large("True"), large("False"))
    elif pa.types.is_floating(kind):
        without_nan = pc.if_else(pc.is_nan(column), None, column)
        text = pc.cast(without_nan, pa.large_string())
        integral = pc.match_substring_regex(text, r"^-?\d+$")
        text = pc.if_else(integral, join(text, large(".0"), separator=""), text)
    elif (
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    ):
        text = quote(pc.cast(column, pa.large_string()), delimiter, quote_char)
    else:
        text = pc.cast(column, pa.large_string())
    return cast(pa.Array, pc.fill_null(pc.cast(text, pa.large_string()), large("")))


def quote(text: pa.Array, delimiter: str, quote_char: str = '"') -> pa.Array:
    """Quote the strings that need it; nulls stay null."""
    special = "[" + re.escape(delimiter + quote_char) + "\r\n]"
    needs = pc.or_(
        pc.match_substring_regex(text, special),
        pc.is_in(text, value_set=pa.array(NULL_TOKENS, pa.large_string())),
    )
    doubled = pc.replace_substring(text, quote_char, quote_char * 2)
    quoted = join(large(quote_char), doubled, large(quote_char), separator="")
    return pc.if_else(needs, quoted, text)


def join_lines(columns: list[pa.Array], delimiter: str) -> pa.Buffer:
    r"""The bytes of rows made of ``columns`` joined by ``delimiter``, each ending ``\n``."""
    rows = columns[0] if len(columns) == 1 else join(*columns, separator=delimiter)
    lines = join(rows, large(""), separator="\n")
    return string_bytes(lines)


def string_bytes(array: pa.Array) -> pa.Buffer:
    """The concatenated bytes of a null-free large_string array, without copying."""
    if len(array) == 0:
        return pa.py_buffer(b"")
    _, offsets_buffer, data = array.buffers()
    offsets = pa.Array.from_buffers(
        pa.int64(), len(array) + 1, [None, offsets_buffer], offset=array.offset
    )
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    assert data is not None
    assert start is not None
    assert end is not None
    return data.slice(start, end - start)
