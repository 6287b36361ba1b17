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

from dagster_ds.features import FeatureType, cast_array
from dagster_ds.features._decode import column_features
from dagster_ds.features._encode import encode_nested


class StoredValue:
    """One returned value of a decoded column, and the feature that stores it."""

    __slots__ = ("feature", "value")

    def __init__(self, feature: FeatureType, value: Any) -> None:
        self.feature, self.value = feature, value


def stored_array(values: Sequence[StoredValue]) -> pa.Array[Any]:
    """Values of one column (all `StoredValue`) as an array of their feature's type."""
    feature = values[0].feature
    return array_of(feature, [item.value for item in values])


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
                if name in row and not isinstance(row[name], StoredValue):
                    row[name] = StoredValue(feature, row[name])


def encode_batch_result(result: Any, schema: pa.Schema) -> None:
    """Store, in place, a returned batch's columns of decoded input columns with their feature."""
    features = column_features(schema)
    if not features or not isinstance(result, MutableMapping):
        return
    columns: MutableMapping[str, Any] = result  # pyright: ignore[reportUnknownVariableType]
    for name, feature in features.items():
        values = columns.get(name)
        if isinstance(values, list | tuple):
            items: Sequence[Any] = values  # pyright: ignore[reportUnknownVariableType]
            columns[name] = array_of(feature, items)


def is_stored(values: Any) -> bool:
    """Whether ``values`` is a column of `StoredValue` (see `stored_array`)."""
    return isinstance(values, list) and bool(values) and isinstance(values[0], StoredValue)
