"""Cast Arrow data to features, checked: no value changes without an error saying where.

Everything stays in Arrow: nested data is taken apart (struct fields, list
values), cast, and put back together with the original validity. An error names
the column (with the path inside it, ``answers.text[]``), the source and target
types, the first offending table row and its value, and how to fix it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, overload

import pyarrow as pa

from dagster_ds.errors import ColumnMismatchError
from dagster_ds.features._checks import (
    Where,
    cast_primitive,
    first_true,
    nulls,
    per_chunk,
    type_error,
    value_error,
)
from dagster_ds.features._composite import Composite
from dagster_ds.features._features import Features
from dagster_ds.features._labels import cast_labels
from dagster_ds.features._mapping import contains_class_label, feature_to_arrow_type
from dagster_ds.features._media import Media
from dagster_ds.features._types import ClassLabel, FeatureType, Json, LargeList, List, Value

# pyarrow.compute is imported where it is used (its import generates the compute
# functions: about 40 ms), and bound as ``pc: Any``: their stubs reject scalar
# arguments (``pc.less(array, 3)``) that pyarrow accepts.


def check_columns(actual: Sequence[str], expected: Sequence[str], *, what: str = "table") -> None:
    """Raise `ColumnMismatchError` unless both hold the same column names (in any order)."""
    if sorted(actual) == sorted(expected):
        return
    missing = [name for name in expected if name not in actual]
    extra = [name for name in actual if name not in expected]
    duplicated = sorted({name for name in actual if list(actual).count(name) > 1})
    parts = []
    if missing:
        parts.append(f"missing {missing!r} (in the features, not in the {what})")
    if extra:
        parts.append(f"extra {extra!r} (in the {what}, not in the features)")
    if duplicated:
        parts.append(f"duplicated {duplicated!r}")
    raise ColumnMismatchError(
        f"The {what}'s columns do not match the features: {'; '.join(parts)}. "
        "Select or remove columns first (select_columns / remove_columns), or give features "
        "for exactly these columns.",
        missing=missing,
        extra=extra,
    )


@overload
def cast_array(array: pa.Array, feature: FeatureType, *, column: str = "") -> pa.Array: ...
@overload
def cast_array(
    array: pa.ChunkedArray, feature: FeatureType, *, column: str = ""
) -> pa.ChunkedArray: ...
def cast_array(
    array: pa.Array | pa.ChunkedArray, feature: FeatureType, *, column: str = ""
) -> pa.Array | pa.ChunkedArray:
    """Cast Arrow data to the storage type of ``feature``, refusing any silent loss.

    Allowed when every value survives: integers to bool when they are 0/1,
    floats to integers when integral, strings to numbers when they parse,
    strings to `ClassLabel` through its names (or integer strings), integers to
    `ClassLabel` within its range (``-1`` means no label), lists to fixed-size
    `List` when every list has that length, structs to dicts with the same or
    fewer fields (missing fields become null). Dictionary-encoded data is decoded.

    Args:
        array: An Arrow array or chunked array.
        feature: The target feature.
        column: The column name used in error messages.

    Returns:
        Arrow data of type ``feature_to_arrow_type(feature)``, chunked like the input.

    Raises:
        CastError: the types do not convert, or a value would change; the message
            names the column, the types, the first offending row and its value.

    Example:
        >>> cast_array(pa.array(["pos", "neg"]), ClassLabel(names=["neg", "pos"])).to_pylist()
        [1, 0]
    """
    return per_chunk(
        array,
        column or "<array>",
        lambda: feature_to_arrow_type(feature),
        lambda part, where: _cast(part, feature, where),
    )


@overload
def cast_table(table: pa.Table, features: Mapping[str, FeatureType]) -> pa.Table: ...
@overload
def cast_table(table: pa.RecordBatch, features: Mapping[str, FeatureType]) -> pa.RecordBatch: ...
def cast_table(
    table: pa.Table | pa.RecordBatch, features: Mapping[str, FeatureType]
) -> pa.Table | pa.RecordBatch:
    """Cast a table (or record batch) to ``features``: the anchor's ``Dataset.cast`` on Arrow.

    The result has the features' column order and their ``arrow_schema``
    (with the ``huggingface`` metadata). See `cast_array` for what is allowed.

    Raises:
        ColumnMismatchError: the column names differ; the message lists the
            missing and extra ones.
        CastError: a column does not convert without loss.

    Example:
        >>> table = pa.table({"flag": [0, 1, 1]})
        >>> cast_table(table, Features({"flag": Value("bool")})).column("flag").to_pylist()
        [False, True, True]
    """
    features = features if isinstance(features, Features) else Features(features)
    check_columns(table.column_names, list(features))
    schema = features.arrow_schema
    if isinstance(table, pa.RecordBatch):
        arrays = [cast_array(table.column(name), f, column=name) for name, f in features.items()]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    columns = [cast_array(table.column(name), f, column=name) for name, f in features.items()]
    return pa.Table.from_arrays(columns, schema=schema)


def _cast(array: pa.Array, feature: FeatureType, where: Where) -> pa.Array:
    if isinstance(feature, ClassLabel):
        return cast_labels(array, feature, where)
    if isinstance(feature, Media):
        array = feature.to_storage(array)
    if isinstance(feature, Composite):
        feature = feature.storage
    target = feature_to_arrow_type(feature)
    if isinstance(array, pa.DictionaryArray):
        array = array.dictionary_decode()
    if array.type == target and not contains_class_label(feature):
        return array
    if isinstance(feature, Json):
        return _cast_json(array, where)
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if pa.types.is_null(array.type):
        return nulls(len(array), target)
    if isinstance(feature, Mapping):
        return _cast_struct(array, feature, target, where)
    if isinstance(feature, List | LargeList):
        return _cast_list(array, feature, where)
    if pa.types.is_nested(array.type):
        raise type_error(
            array,
            target,
            where,
            "nested data does not convert to a scalar",
            "Map the column first (Dataset.map) to compute one value per row.",
        )
    assert isinstance(feature, Value)
    return cast_primitive(array, target, where)


def _cast_struct(
    array: pa.Array, feature: Mapping[str, Any], target: pa.DataType, where: Where
) -> pa.Array:
    if not isinstance(array, pa.StructArray):
        raise type_error(
            array,
            target,
            where,
            "only a struct converts to a dict of features",
            "Map the column first.",
        )
    names = [array.type.field(i).name for i in range(array.type.num_fields)]
    extra = [name for name in names if name not in feature]
    if extra:
        raise type_error(
            array,
            target,
            where,
            f"its fields {extra!r} are not in the features",
            "Add them to the features, or drop them in a map first.",
        )
    if not feature:
        return array
    children = dict(zip(names, array.flatten(), strict=True))
    arrays = [
        _cast(children[name], sub, where.field(name))
        if name in children
        else nulls(len(array), feature_to_arrow_type(sub))
        for name, sub in feature.items()
    ]
    fields = [pa.field(name, child.type) for name, child in zip(feature, arrays, strict=True)]
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)


def _cast_list(array: pa.Array, feature: List | LargeList, where: Where) -> pa.Array:
    import pyarrow.compute

    pc: Any = pyarrow.compute
    target = feature_to_arrow_type(feature)
    kind = array.type
    if not (
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    ):
        raise type_error(
            array, target, where, "only lists convert to a list feature", "Map the column first."
        )
    lengths = pc.fill_null(pc.list_value_length(array), 0).cast(pa.int64())
    fixed = feature.length if isinstance(feature, List) else -1
    if fixed >= 0:
        wrong = first_true(pc.and_(pc.is_valid(array), pc.not_equal(lengths, fixed)))
        if wrong >= 0:
            raise value_error(
                array,
                wrong,
                target,
                where,
                f"a list of {len(array[wrong].as_py())} items where {fixed} are required",
                "Pad or truncate the lists in a map first, or use List(feature) without a length.",
            )
    offsets = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(lengths)])
    values = _cast(array.flatten(), feature.feature, where.items(offsets))  # pyright: ignore[reportAttributeAccessIssue]
    mask = array.is_null() if array.null_count else None
    if isinstance(feature, LargeList):
        return pa.LargeListArray.from_arrays(offsets, values, type=target, mask=mask)
    if fixed < 0:
        return pa.ListArray.from_arrays(offsets.cast(pa.int32()), values, type=target, mask=mask)  # pyright: ignore[reportCallIssue, reportArgumentType]
    if mask is None:
        return pa.FixedSizeListArray.from_arrays(values, type=target)  # pyright: ignore[reportArgumentType]
    variable = pa.ListArray.from_arrays(offsets.cast(pa.int32()), values, mask=mask)  # pyright: ignore[reportCallIssue, reportArgumentType]
    sliced = pc.list_slice(variable, 0, fixed, return_fixed_size_list=True)
    return sliced.cast(target)


def _cast_json(array: pa.Array, where: Where) -> pa.Array:
    import pyarrow.compute

    pc: Any = pyarrow.compute
    target = pa.json_()
    if isinstance(array.type, pa.JsonType):
        return array
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        texts = array.cast(pa.string())
        # Arrow cannot validate JSON: this is the one check that reads Python values.
        for index, text in enumerate(texts.to_pylist()):
            if text is None:
                continue
            try:
                json.loads(text)
            except ValueError as error:
                raise value_error(
                    array,
                    index,
                    target,
                    where,
                    f"which is not JSON text ({error})",
                    "Encode the values with json.dumps in a map first.",
                ) from error
        return pa.ExtensionArray.from_storage(target, texts)
    if pa.types.is_null(kind):
        return nulls(len(array), target)
    if pa.types.is_floating(kind):
        infinite = first_true(pc.and_(pc.is_valid(array), pc.invert(pc.is_finite(array))))
        if infinite >= 0:
            raise value_error(
                array,
                infinite,
                target,
                where,
                "which JSON cannot represent",
                "Replace NaN and infinities (e.g. by null) in a map first.",
            )
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        return pa.ExtensionArray.from_storage(target, array.cast(pa.string()))
    if pa.types.is_struct(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind):
        # Objects and arrays become their JSON text, as the anchor encodes them.
        texts = [
            None if value is None else json.dumps(value, separators=(",", ":"))
            for value in array.to_pylist()
        ]
        return pa.ExtensionArray.from_storage(target, pa.array(texts, pa.string()))
    raise type_error(
        array,
        target,
        where,
        "only JSON text, numbers, booleans, objects and lists convert to Json",
        "Encode the values with json.dumps in a map first.",
    )
