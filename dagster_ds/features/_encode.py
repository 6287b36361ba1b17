"""Python examples to storable form: the anchor's ``encode_nested_example``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster_ds.errors import FeatureError
from dagster_ds.features._composite import Composite
from dagster_ds.features._types import ClassLabel, FeatureType, Json, LargeList, List, Value


def encode_nested(feature: FeatureType, value: Any) -> Any:
    """``value`` with ClassLabel names as integers, Json as text and Values coerced, at any depth.

    None stays None; a struct's missing fields become None.
    """
    if value is None:
        return None
    if isinstance(feature, Mapping):
        if not isinstance(value, Mapping):
            raise FeatureError(f"Expected a dict for a struct feature, got {value!r}.")
        fields: Mapping[str, Any] = feature
        record: Mapping[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {name: encode_nested(sub, record.get(name)) for name, sub in fields.items()}
    if isinstance(feature, List | LargeList):
        item = feature.feature
        items: list[Any] = list(value)
        if _needs_encoding(item, items):
            return [encode_nested(item, element) for element in items]
        return items
    if isinstance(feature, Value | ClassLabel | Json):
        return feature.encode_example(value)
    if isinstance(feature, Composite):
        return encode_nested(feature.storage, feature.encode_example(value))
    return value


def _needs_encoding(item: FeatureType, items: list[Any]) -> bool:
    """Whether a list's items change when encoded, judged on the first non-null one.

    As in the anchor, so that lists of plain values skip the per-item Python pass.
    """
    if _holds_encoded(item):  # names to integers, values to JSON text: at any depth
        return True
    first = next((element for element in items if element is not None), None)
    if first is None:
        return False
    encoded = encode_nested(item, first)
    try:
        return bool(encoded != first)
    except ValueError:  # comparing numpy arrays
        return False


def _holds_encoded(feature: FeatureType) -> bool:
    """Whether ``feature`` has a ClassLabel, Json or struct anywhere (values always change)."""
    while isinstance(feature, List | LargeList):
        feature = feature.feature
    return isinstance(feature, ClassLabel | Json | Mapping | Composite)


def holds_python_encoded(feature: FeatureType) -> bool:
    """Whether Python values of ``feature`` need `encode_nested` (a ClassLabel or Json inside)."""
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        return any(holds_python_encoded(sub) for sub in fields.values())
    if isinstance(feature, List | LargeList):
        return holds_python_encoded(feature.feature)
    return isinstance(feature, ClassLabel | Json | Composite)
