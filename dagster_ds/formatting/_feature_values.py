# pyarrow is loosely typed: this module turns Python values into its arrays.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false
"""Decoded values that a function gives back, stored again with the column's feature.

Readers get `Json` values as objects and `Image` values as PIL images (see
``features/_decode``). When a map function returns such a column, its values are
encoded with the input column's feature, so the column keeps that feature (as the
anchor) instead of being inferred from the objects.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import pyarrow as pa

from dagster_ds.errors import FeatureError
from dagster_ds.features import (
    Features,
    FeatureType,
    Media,
    cast_array,
    column_features,
    encode_nested,
    features_to_schema_metadata,
)
from dagster_ds.formatting._lazy import LazyBatch
from dagster_ds.formatting._lazy_row import LazyRow

_DO_NOT_FIT = (FeatureError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError)


class StoredValue:
    """One returned value of a decoded column, and the feature that stores it."""

    __slots__ = ("feature", "value")

    def __init__(self, feature: FeatureType, value: Any) -> None:
        self.feature, self.value = feature, value


def stored_array(values: Sequence[StoredValue]) -> pa.Array[Any] | None:
    """Values of one column (all `StoredValue`) as an array of their feature's type.

    None when they do not fit it (the function put something else in the column):
    the column is then typed from its values, as any other.
    """
    feature = values[0].feature
    try:
        return array_of(feature, [item.value for item in values])
    except _DO_NOT_FIT:
        return None


def array_of(feature: FeatureType, values: Sequence[Any]) -> pa.Array[Any]:
    """Python values of ``feature`` (decoded or stored form) as an Arrow array of its type."""
    encoded = [encode_nested(feature, value) for value in values]
    return cast_array(pa.array(encoded), feature)


def encode_results(results: list[Any], schema: pa.Schema) -> None:
    """Mark, in place, each returned dict's values of decoded input columns as `StoredValue`."""
    features = column_features(schema)
    if not features:
        return
    for result in results:
        if isinstance(result, MutableMapping):
            row: MutableMapping[str, Any] = result  # pyright: ignore[reportUnknownVariableType]
            for name, feature in features.items():
                if isinstance(row, LazyRow) and not row.was_read_or_set(name):
                    continue  # still the input's own value
                if name in row and not isinstance(row[name], StoredValue):
                    row[name] = StoredValue(feature, row[name])


def encode_batch_result(result: Any, schema: pa.Schema) -> None:
    """Store, in place, a returned batch's columns of decoded input columns with their feature."""
    features = column_features(schema)
    if not features or not isinstance(result, MutableMapping):
        return
    columns: MutableMapping[str, Any] = result  # pyright: ignore[reportUnknownVariableType]
    for name, feature in features.items():
        if isinstance(result, LazyBatch) and not result.was_read_or_set(name):
            continue  # still the input's own array
        values = columns.get(name)
        if isinstance(values, list | tuple):
            items: Sequence[Any] = values  # pyright: ignore[reportUnknownVariableType]
            try:
                columns[name] = array_of(feature, items)
            except _DO_NOT_FIT:
                continue  # something else than the input's values: typed as any column


def with_media_features(
    merged: pa.RecordBatch, inputs: pa.RecordBatch, replaced: Sequence[str]
) -> pa.RecordBatch:
    """``merged`` with the `Image`/`Audio` features of the input columns it still holds.

    A stream's map output has no features of its own (the anchor's neither), but its
    image and sound columns still decode when read, as the anchor hands them out.
    """
    kept = {
        name: feature
        for name, feature in column_features(inputs.schema).items()
        if isinstance(feature, Media)
        and name in merged.schema.names
        and (name not in replaced or merged.schema.field(name).type == feature.pa_type)
    }
    if not kept:
        return merged
    return merged.replace_schema_metadata(features_to_schema_metadata(Features(kept)))


def is_stored(values: Any) -> bool:
    """Whether ``values`` is a column of `StoredValue` (see `stored_array`)."""
    return isinstance(values, list) and bool(values) and isinstance(values[0], StoredValue)
