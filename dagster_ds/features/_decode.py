"""Stored values to what readers get: JSON text to objects, image files to PIL images.

As the anchor's ``decode_nested_example``: the Python, pandas, numpy and torch
formats decode (the Arrow format and `to_dict` do not). What to decode comes from
a table's schema: its ``huggingface`` metadata, else the ``arrow.json`` type
(`Json` is self-describing in Arrow).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import pyarrow as pa

from dagster_ds.errors import FeatureError
from dagster_ds.features._features import Features
from dagster_ds.features._media import Media
from dagster_ds.features._types import FeatureType, Json, LargeList, List

Decoder = Callable[[list[Any]], list[Any]]
"""Decodes one column's Python values (a list, None where null)."""

_MARKERS = (b'"Json"', b'"Image"', b'"Audio"')


def requires_decoding(feature: FeatureType) -> bool:
    """Whether values of ``feature`` change when read: a `Json`, `Image` or `Audio` inside."""
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        return any(requires_decoding(sub) for sub in fields.values())
    if isinstance(feature, List | LargeList):
        return requires_decoding(feature.feature)
    return isinstance(feature, Json | Media) and feature.decode


def decode_nested(feature: FeatureType, value: Any, decode_media: bool = True) -> Any:
    """One stored value of ``feature`` as readers get it, at any depth.

    With ``decode_media=False`` only `Json` values are decoded (images and sounds stay
    stored), as the anchor's `to_dict`, `to_list` and `to_pandas`.

    Example:
        >>> decode_nested(List(Json()), ['{"a":1}', "[2]"])
        [{'a': 1}, [2]]
    """
    if value is None:
        return None
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        record: Mapping[str, Any] = value
        return {
            name: decode_nested(fields[name], item, decode_media) if name in fields else item
            for name, item in record.items()
        }
    if isinstance(feature, List | LargeList):
        item_feature = feature.feature
        if not requires_decoding(item_feature):
            return value
        return [decode_nested(item_feature, item, decode_media) for item in value]
    if isinstance(feature, Json):
        if not feature.decode or not isinstance(value, str):
            return value
        return json.loads(value)
    if isinstance(feature, Media) and feature.decode and decode_media:
        media: Any = feature
        return media.decode_example(value)
    return value


_Answer = TypeVar("_Answer")


class SchemaMemo(Generic[_Answer]):
    """A function of a schema that remembers its answer for the last schema.

    Asked for every batch, mostly of one schema (a stream's schemas repeat): comparing
    the schema with the last one (metadata included) costs a fraction of computing the
    answer again.

    Example:
        >>> has_text = SchemaMemo(lambda schema: "text" in schema.names)
        >>> has_text(pa.schema([("text", pa.string())]))
        True
    """

    def __init__(self, compute: Callable[[pa.Schema], _Answer]) -> None:
        self._compute = compute
        self._last: tuple[pa.Schema, _Answer] | None = None
        functools.update_wrapper(self, compute)

    def __call__(self, schema: pa.Schema) -> _Answer:
        last = self._last  # one read: another thread may replace it meanwhile
        if last is not None and (last[0] is schema or last[0].equals(schema, check_metadata=True)):
            return last[1]
        answer = self._compute(schema)
        self._last = (schema, answer)
        return answer


@SchemaMemo
def column_decoders(schema: pa.Schema) -> Mapping[str, Decoder]:
    """The decoder of each column of ``schema`` whose values change when read (often none).

    Called for every batch handed out, so the common case (features that decode
    nothing, describing every column) costs one metadata read and no parsing.
    """
    stored = _stored(schema)
    if stored is _NOTHING:
        return {}
    return _decoders(schema, stored)


@SchemaMemo
def column_features(schema: pa.Schema) -> Mapping[str, FeatureType]:
    """The feature of each column of ``schema`` whose values change when read (often none)."""
    stored = _stored(schema)
    if stored is _NOTHING:
        return {}
    return _features(schema, stored)


@SchemaMemo
def json_decoders(schema: pa.Schema) -> Mapping[str, Decoder]:
    """The decoders of the columns of ``schema`` holding `Json` values, decoding only those.

    What the anchor's `to_dict`, `to_list` and `to_pandas` give: JSON text parsed,
    images and sounds as stored.
    """
    return {
        name: functools.partial(_decode_json_column, feature)
        for name, feature in column_features(schema).items()
        if _has_json(feature)
    }


def _decode_json_column(feature: FeatureType, values: list[Any]) -> list[Any]:
    return [decode_nested(feature, value, decode_media=False) for value in values]


def _has_json(feature: FeatureType) -> bool:
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        return any(_has_json(sub) for sub in fields.values())
    if isinstance(feature, List | LargeList):
        return _has_json(feature.feature)
    return isinstance(feature, Json) and feature.decode


_NOTHING = b""


def _stored(schema: pa.Schema) -> bytes | None:
    """The features metadata to decode by; `_NOTHING` when nothing can need decoding."""
    metadata = schema.metadata
    stored = metadata.get(b"huggingface") if metadata else None
    if stored is not None and not any(marker in stored for marker in _MARKERS):
        if _described(stored) >= set(schema.names):
            return _NOTHING  # every column has a feature, and none decodes
        stored = None
    if stored is None and not any(_holds_json(field.type) for field in schema):
        return _NOTHING
    return stored


@functools.lru_cache(maxsize=256)
def _described(stored: bytes) -> frozenset[str]:
    """The columns that features metadata describes."""
    try:
        features = json.loads(stored)["info"]["features"]
    except (ValueError, KeyError, TypeError):
        return frozenset()
    return frozenset(features) if isinstance(features, dict) else frozenset()


@functools.lru_cache(maxsize=256)
def _features(schema: pa.Schema, stored: bytes | None) -> Mapping[str, FeatureType]:
    # ``stored`` is part of the key: schemas compare equal whatever their metadata.
    try:  # a stored feature counts only where its Arrow type is the column's
        features = Features.from_arrow_schema(schema)
    except FeatureError:
        return {}
    return {name: feature for name, feature in features.items() if requires_decoding(feature)}


@functools.lru_cache(maxsize=256)
def _decoders(schema: pa.Schema, stored: bytes | None) -> Mapping[str, Decoder]:
    return {
        name: functools.partial(_decode_column, feature)
        for name, feature in _features(schema, stored).items()
    }


def _decode_column(feature: FeatureType, values: list[Any]) -> list[Any]:
    return [decode_nested(feature, value) for value in values]


def _holds_json(kind: pa.DataType) -> bool:
    if isinstance(kind, pa.JsonType):
        return True
    if isinstance(kind, pa.StructType):
        return any(_holds_json(field.type) for field in kind)
    if isinstance(kind, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
        return _holds_json(kind.value_type)
    return False
