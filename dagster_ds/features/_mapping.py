"""Features to Arrow types and back."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from dagster_ds.errors import FeatureError
from dagster_ds.features._composite import Composite
from dagster_ds.features._dtypes import arrow_to_dtype
from dagster_ds.features._types import ClassLabel, FeatureType, Json, LargeList, List, Value


def feature_to_arrow_type(feature: FeatureType) -> pa.DataType:
    """The Arrow type that stores a feature.

    A dict of features is a struct (in the dict's order), `List` a list (a
    fixed-size list when it has a length), `LargeList` a large list, `ClassLabel`
    ``int64``, `Json` Arrow's ``arrow.json`` extension type.

    Raises:
        FeatureError: ``feature`` is not a feature type.

    Example:
        >>> feature_to_arrow_type({"a": List(Value("int8"), length=2)})
        StructType(struct<a: fixed_size_list<item: int8>[2]>)
    """
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        return pa.struct([(name, feature_to_arrow_type(sub)) for name, sub in fields.items()])
    if isinstance(feature, List):
        return pa.list_(feature_to_arrow_type(feature.feature), feature.length)
    if isinstance(feature, LargeList):
        return pa.large_list(feature_to_arrow_type(feature.feature))
    if isinstance(feature, list | tuple):  # the legacy [feature] spelling of List(feature)
        items: list[Any] = list(feature)  # pyright: ignore[reportUnknownArgumentType]
        if len(items) != 1:
            raise FeatureError(f"A list feature holds exactly one item feature, got {items!r}.")
        return pa.list_(feature_to_arrow_type(items[0]))
    if isinstance(feature, Value | ClassLabel | Json):
        return feature.pa_type
    if isinstance(feature, Composite):
        return feature_to_arrow_type(feature.storage)
    raise FeatureError(
        f"{feature!r} is not a feature type; use Value, ClassLabel, List, LargeList, Json "
        "or a dict of them."
    )


def arrow_type_to_feature(arrow_type: pa.DataType) -> FeatureType:
    """The feature that describes an Arrow type (the inverse of `feature_to_arrow_type`).

    Structs become dicts, lists and fixed-size lists `List` (with ``length``),
    large lists `LargeList`, ``arrow.json`` `Json`, dictionary types their value
    type's `Value`, and every other type its `Value`. ``int64`` gives
    ``Value("int64")``: label names live only in schema metadata.

    Raises:
        FeatureError: the type has no feature equivalent (map, union, list view).

    Example:
        >>> arrow_type_to_feature(pa.list_(pa.string()))
        List(Value('string'))
    """
    if isinstance(arrow_type, pa.StructType):
        return {field.name: arrow_type_to_feature(field.type) for field in arrow_type}
    if isinstance(arrow_type, pa.FixedSizeListType):
        return List(arrow_type_to_feature(arrow_type.value_type), length=arrow_type.list_size)
    if isinstance(arrow_type, pa.ListType):
        return List(arrow_type_to_feature(arrow_type.value_type))
    if isinstance(arrow_type, pa.LargeListType):
        return LargeList(arrow_type_to_feature(arrow_type.value_type))
    if isinstance(arrow_type, pa.JsonType):
        return Json()
    if isinstance(arrow_type, pa.BaseExtensionType):
        array_feature = _anchor_array_feature(arrow_type)
        if array_feature is not None:
            return array_feature
        raise FeatureError(
            f"Arrow extension type {arrow_type} has no feature equivalent; "
            "cast the column to its storage type first."
        )
    return Value(arrow_to_dtype(arrow_type))


def _anchor_array_feature(arrow_type: pa.BaseExtensionType) -> FeatureType | None:
    """The ArrayND of the anchor's array extension types (registered when it is imported)."""
    from dagster_ds.features._composite import COMPOSITE_TYPES

    name = arrow_type.extension_name.rsplit(".", 1)[-1].removesuffix("ExtensionType")
    shape, dtype = getattr(arrow_type, "shape", None), getattr(arrow_type, "value_type", None)
    if name not in COMPOSITE_TYPES or shape is None or dtype is None:
        return None
    made: Any = COMPOSITE_TYPES[name](shape=tuple(shape), dtype=str(dtype))  # pyright: ignore[reportCallIssue]
    return made


def visit(feature: FeatureType, function: Callable[[FeatureType], FeatureType]) -> FeatureType:
    """Rebuild a feature bottom-up, replacing each node by ``function(node)``."""
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        return function({name: visit(sub, function) for name, sub in fields.items()})
    if isinstance(feature, List):
        return function(
            List(visit(feature.feature, function), length=feature.length, id=feature.id)
        )
    if isinstance(feature, LargeList):
        return function(LargeList(visit(feature.feature, function), id=feature.id))
    return function(feature)


def upgrade_legacy_lists(feature: Any) -> FeatureType:
    """Replace the legacy ``[feature]`` spelling by ``List(feature)``, at any depth."""
    if isinstance(feature, list | tuple):
        items: list[Any] = list(feature)  # pyright: ignore[reportUnknownArgumentType]
        if len(items) != 1:
            raise FeatureError(f"A list feature holds exactly one item feature, got {items!r}.")
        return List(upgrade_legacy_lists(items[0]))
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        return {name: upgrade_legacy_lists(sub) for name, sub in fields.items()}
    if isinstance(feature, List):
        return List(upgrade_legacy_lists(feature.feature), length=feature.length, id=feature.id)
    if isinstance(feature, LargeList):
        return LargeList(upgrade_legacy_lists(feature.feature), id=feature.id)
    return feature


def contains_class_label(feature: FeatureType) -> bool:
    """Whether a ClassLabel sits anywhere in ``feature`` (its casts need range checks)."""
    if isinstance(feature, ClassLabel):
        return True
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        return any(contains_class_label(sub) for sub in fields.values())
    if isinstance(feature, List | LargeList):
        return contains_class_label(feature.feature)
    return False
