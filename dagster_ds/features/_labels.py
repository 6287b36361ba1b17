"""Cast Arrow data to `ClassLabel` storage: names or ids to ``int64`` labels, checked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.features._checks import (
    Where,
    cast_primitive,
    first_true,
    nulls,
    type_error,
    value_error,
)

if TYPE_CHECKING:
    from dagster_ds.features._types import ClassLabel

_INT_PATTERN = r"^[+-]?[0-9]+$"

# pyarrow.compute is imported where it is used (its import generates the compute
# functions: about 40 ms), and bound as ``pc: Any``: their stubs reject scalar
# arguments (``pc.less(array, 3)``) that pyarrow accepts.


def cast_labels(array: pa.Array, label: ClassLabel, where: Where) -> pa.Array:
    """Label names (strings), integer strings or ids as ``label``'s ``int64`` labels.

    A name may have spaces around it; an id (or integer string) must lie in
    ``-1 .. num_classes - 1`` (``-1`` means no label); null stays null.

    Raises:
        CastError: a name not in ``label.names``, an id out of range, or data that
            holds no labels (nested); the message names the row and its value.
    """
    import pyarrow.compute

    pc: Any = pyarrow.compute
    if isinstance(array, pa.DictionaryArray):
        array = array.dictionary_decode()
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if pa.types.is_null(array.type):
        return nulls(len(array), pa.int64())
    kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        labels = _labels_from_names(array.cast(pa.string()), label)
        missing = first_true(pc.and_(pc.is_valid(array), pc.is_null(labels)))
        if missing >= 0:
            raise value_error(
                array,
                missing,
                label,
                where,
                f"which is not one of the ClassLabel names {label._names_preview()}",  # pyright: ignore[reportPrivateUsage]
                "Use ClassLabel names that include it, or map the column first.",
            )
        return labels
    if pa.types.is_nested(kind):
        raise type_error(array, label, where, "nested data is not a label", "Map the column first.")
    labels = cast_primitive(array, pa.int64(), where)
    bad = first_true(pc.or_(pc.less(labels, -1), pc.greater_equal(labels, label.num_classes)))
    if bad >= 0:
        raise value_error(
            array,
            bad,
            label,
            where,
            f"but the ClassLabel has {label.num_classes} classes (0 to {label.num_classes - 1}, "
            "or -1 for no label)",
            "Use ClassLabel names that cover every label, or map the column first.",
        )
    return labels


def _labels_from_names(strings: pa.Array, label: ClassLabel) -> pa.Array:
    """Names (also with spaces around, or integer strings in range) to labels; null if unknown."""
    import pyarrow.compute

    pc: Any = pyarrow.compute
    names = pa.array(label.names, pa.string())
    labels = pc.index_in(strings, value_set=names).cast(pa.int64())
    if first_true(pc.and_(pc.is_valid(strings), pc.is_null(labels))) < 0:
        return labels
    trimmed = pc.utf8_trim_whitespace(strings)
    labels = pc.coalesce(labels, pc.index_in(trimmed, value_set=names).cast(pa.int64()))
    numeric = pc.fill_null(pc.match_substring_regex(trimmed, _INT_PATTERN), False)
    if first_true(numeric) < 0:
        return labels
    digits = pc.if_else(numeric, trimmed, pa.scalar(None, pa.string()))
    try:
        numbers = digits.cast(pa.int64())
    except pa.ArrowInvalid:  # beyond int64: certainly out of range
        numbers = pc.if_else(pc.less_equal(pc.utf8_length(digits), 18), digits, None).cast(
            pa.int64()
        )
    in_range = pc.and_(pc.greater_equal(numbers, -1), pc.less(numbers, label.num_classes))
    return pc.coalesce(labels, pc.if_else(in_range, numbers, pa.scalar(None, pa.int64())))
