"""`Features`: the columns of a dataset and their feature types; schema metadata."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from dagster_ds.errors import FeatureError, UnsupportedFeatureWarning
from dagster_ds.features._encode import encode_nested
from dagster_ds.features._mapping import (
    arrow_type_to_feature,
    feature_to_arrow_type,
    upgrade_legacy_lists,
)
from dagster_ds.features._media import Media
from dagster_ds.features._serialize import (
    ANCHOR_ONLY_TYPES,
    feature_from_dict,
    feature_to_dict,
    from_yaml_list,
    to_yaml_list,
)
from dagster_ds.features._types import FeatureType, LargeList, List

METADATA_KEY = "huggingface"


class Features(dict[str, FeatureType]):
    """The columns of a dataset, in order, and the feature type of each.

    A ``dict`` of column name to feature: `Value`, `ClassLabel`, `List`,
    `LargeList`, `Json`, or a dict of features (an Arrow struct). The legacy
    ``[feature]`` spelling is turned into ``List(feature)``. Equality is dict
    equality, as in the anchor; pickling and hashing (`Hasher.hash`) keep the
    column order, since it is part of the Arrow schema.

    Example:
        >>> label = ClassLabel(names=["neg", "pos"])
        >>> features = Features({"text": Value("string"), "label": label})
        >>> features.arrow_schema.field("label").type
        DataType(int64)
        >>> Features.from_dict(features.to_dict()) == features
        True
    """

    def __init__(self, /, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, feature in self.items():
            dict.__setitem__(self, name, upgrade_legacy_lists(feature))

    def __setitem__(self, name: str, feature: Any) -> None:
        super().__setitem__(name, upgrade_legacy_lists(feature))

    def update(self, *args: Any, **kwargs: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Add or replace columns, like ``dict.update``."""
        for name, feature in dict(*args, **kwargs).items():
            self[name] = feature

    def __reduce__(self) -> tuple[Any, ...]:
        return _features_from_json, (json.dumps(self.to_dict()),)

    # -- Arrow ------------------------------------------------------------------

    @property
    def type(self) -> pa.StructType:
        """The Arrow struct type of a row."""
        return pa.struct([(name, feature_to_arrow_type(feature)) for name, feature in self.items()])

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema, with the features in its ``huggingface`` metadata.

        Example:
            >>> Features({"a": Value("int8")}).arrow_schema.names
            ['a']
        """
        return pa.schema(list(self.type)).with_metadata(features_to_schema_metadata(self))

    @classmethod
    def from_arrow_schema(cls, schema: pa.Schema) -> Features:
        """The features of an Arrow schema, read from its metadata where present.

        A column takes its feature from the ``huggingface`` metadata (written by
        the anchor or by us, so `ClassLabel` names survive a Parquet round trip)
        when that feature's Arrow type is the column's type; otherwise it is
        inferred from the type (`arrow_type_to_feature`). Nullability is ignored.

        Example:
            >>> schema = pa.schema([("xs", pa.list_(pa.float32(), 2))])
            >>> Features.from_arrow_schema(schema)
            {'xs': List(Value('float32'), length=2)}
        """
        stored = _stored_features(schema.metadata)
        out = cls()
        for field in schema:
            feature = stored.get(field.name)
            if feature is None or feature_to_arrow_type(feature) != field.type:
                feature = arrow_type_to_feature(field.type)
            dict.__setitem__(out, field.name, feature)
        return out

    # -- serialised forms -----------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The anchor's JSON form (``dataset_info.json``, schema metadata).

        Example:
            >>> Features({"a": Value("int8")}).to_dict()
            {'a': {'dtype': 'int8', '_type': 'Value'}}
        """
        return feature_to_dict(dict(self))

    @classmethod
    def from_dict(cls, dic: Mapping[str, Any]) -> Features:
        """Features from the anchor's JSON form, including older anchors' forms.

        Raises:
            FeatureError: a malformed form or a feature type dagster_ds does not model.

        Example:
            >>> Features.from_dict({"a": {"dtype": "int8", "_type": "Value"}})
            {'a': Value('int8')}
        """
        made = feature_from_dict(dict(dic))
        if not isinstance(made, dict):
            raise FeatureError(f"Features.from_dict takes a dict of columns, got {dic!r}.")
        return cls(made)

    def to_yaml_list(self) -> list[dict[str, Any]]:
        """The YAML form of a dataset card's ``dataset_info.features``, as the anchor writes it.

        Example:
            >>> Features({"tokens": List(Value("string"))}).to_yaml_list()
            [{'name': 'tokens', 'list': 'string'}]
        """
        return to_yaml_list(self)

    @classmethod
    def from_yaml_list(cls, yaml_data: list[dict[str, Any]]) -> Features:
        """Features from a dataset card's YAML form (the inverse of `to_yaml_list`).

        Example:
            >>> Features.from_yaml_list([{"name": "tokens", "list": "string"}])
            {'tokens': List(Value('string'))}
        """
        return cls(from_yaml_list(yaml_data))

    # -- derived features ---------------------------------------------------------

    def copy(self) -> Features:
        """A deep copy.

        Example:
            >>> features = Features({"a": Value("int8")})
            >>> features.copy() == features
            True
        """
        return Features.from_dict(self.to_dict())

    def reorder_fields_as(self, other: Mapping[str, Any]) -> Features:
        """These features with columns and struct fields in the order of ``other``'s.

        Only the order changes (each side keeps its own list kinds and leaves), so
        the Arrow type becomes equal to ``other``'s where the leaves agree.

        Raises:
            FeatureError: the two differ in structure or field names; the message
                says where.

        Example:
            >>> f1 = Features({"root": {"a": Value("string"), "b": Value("string")}})
            >>> f2 = Features({"root": {"b": Value("string"), "a": Value("string")}})
            >>> f1.reorder_fields_as(f2)
            {'root': {'b': Value('string'), 'a': Value('string')}}
        """
        reordered = _reorder(dict(self), dict(other), "")
        return Features(reordered)

    def flatten(self, max_depth: int = 16) -> Features:
        """Replace each struct column by one column per field, named ``column.field``.

        `Image` and `Audio` columns stay whole unless ``decode=False`` (as the anchor).

        Args:
            max_depth: How many levels of nesting to flatten at most.

        Example:
            >>> Features({"a": {"b": Value("int8"), "c": {"d": Value("bool")}}}).flatten()
            {'a.b': Value('int8'), 'a.c.d': Value('bool')}
        """
        current = self
        for _ in range(max_depth):
            flattened = Features()
            changed = False
            for name, feature in current.items():
                if isinstance(feature, Media) and not feature.decode:
                    feature = feature.storage  # as the anchor: stored form, two columns
                if isinstance(feature, dict):
                    changed = True
                    for sub_name, sub in feature.items():
                        dict.__setitem__(flattened, f"{name}.{sub_name}", sub)
                else:
                    dict.__setitem__(flattened, name, feature)
            current = flattened
            if not changed:
                break
        return current

    # -- examples -------------------------------------------------------------------

    def encode_example(self, example: Mapping[str, Any]) -> dict[str, Any]:
        """A Python example in storable form: ClassLabel names become integers.

        Example:
            >>> features = Features({"label": ClassLabel(names=["neg", "pos"])})
            >>> features.encode_example({"label": "pos"})
            {'label': 1}
        """
        if example is None:  # pyright: ignore[reportUnnecessaryComparison]
            raise FeatureError("Cannot encode None as an example; expected a dict of columns.")
        return {name: encode_nested(feature, example.get(name)) for name, feature in self.items()}

    def encode_column(self, column: Iterable[Any], column_name: str) -> list[Any]:
        """One column of Python values in storable form.

        Example:
            >>> Features({"label": ClassLabel(names=["a", "b"])}).encode_column(["b"], "label")
            [1]
        """
        feature = self[column_name]
        return [encode_nested(feature, value) for value in column]

    def encode_batch(self, batch: Mapping[str, Iterable[Any]]) -> dict[str, list[Any]]:
        """A batch (dict of columns) in storable form; its columns must be these features'.

        Raises:
            ColumnMismatchError: the batch's columns differ from the features'.

        Example:
            >>> features = Features({"label": ClassLabel(names=["a", "b"])})
            >>> features.encode_batch({"label": ["b", "a"]})
            {'label': [1, 0]}
        """
        from dagster_ds.features._cast import check_columns

        check_columns(list(batch), list(self), what="batch")
        return {name: self.encode_column(column, name) for name, column in batch.items()}


def _features_from_json(text: str) -> Features:
    return Features.from_dict(json.loads(text))


def _reorder(source: Any, target: Any, path: str) -> Any:
    where = f" at {path}" if path else ""
    if isinstance(source, dict):
        if not isinstance(target, dict):
            raise FeatureError(f"Type mismatch{where}: {source!r} (source) vs {target!r} (target).")
        source_fields: dict[str, Any] = source
        target_fields: dict[str, Any] = target  # pyright: ignore[reportUnknownVariableType]
        if set(source_fields) != set(target_fields):
            raise FeatureError(
                f"Keys mismatch{where}: {sorted(set(source_fields) - set(target_fields))!r} are "
                f"missing from the target and {sorted(set(target_fields) - set(source_fields))!r} "
                "from the source."
            )
        return {
            name: _reorder(source_fields[name], target_fields[name], f"{path}.{name}".lstrip("."))
            for name in target_fields
        }
    if isinstance(source, List | LargeList):
        if type(target) is not type(source):
            raise FeatureError(f"Type mismatch{where}: {source!r} (source) vs {target!r} (target).")
        item = _reorder(source.feature, target.feature, f"{path}.<list>".lstrip("."))
        if isinstance(source, List):
            return List(item, length=source.length, id=source.id)
        return LargeList(item, id=source.id)
    return source


# -- schema metadata ------------------------------------------------------------------


def features_to_schema_metadata(features: Mapping[str, FeatureType]) -> dict[str, str]:
    """The Arrow schema metadata that carries ``features``, in the anchor's format.

    Example:
        >>> features_to_schema_metadata(Features({"a": Value("int8")}))
        {'huggingface': '{"info": {"features": {"a": {"dtype": "int8", "_type": "Value"}}}}'}
    """
    return {METADATA_KEY: json.dumps({"info": {"features": feature_to_dict(dict(features))}})}


def with_features_metadata(table: pa.Table, features: Mapping[str, FeatureType]) -> pa.Table:
    """``table`` whose schema metadata carries ``features`` as the anchor's (zero-copy)."""
    wanted = features_to_schema_metadata(features)
    metadata = table.schema.metadata or {}
    if metadata.get(METADATA_KEY.encode()) == wanted[METADATA_KEY].encode():
        return table
    kept = {key: value for key, value in metadata.items() if key != METADATA_KEY.encode()}
    return table.replace_schema_metadata(
        {**kept, **{k.encode(): v.encode() for k, v in wanted.items()}}
    )


def features_from_schema_metadata(metadata: Mapping[Any, Any] | None) -> Features | None:
    """The features stored in Arrow schema metadata, or None if it holds none.

    Keys and values may be ``bytes`` (as pyarrow returns them) or ``str``. A
    column whose stored feature is an anchor type dagster_ds does not model (an
    ``Image``, say) is left out with an `UnsupportedFeatureWarning`, so that
    `Features.from_arrow_schema` infers it from its Arrow type.

    Raises:
        FeatureError: the metadata is not valid JSON or holds malformed features.

    Example:
        >>> meta = features_to_schema_metadata(Features({"a": Value("int8")}))
        >>> features_from_schema_metadata(meta)
        {'a': Value('int8')}
    """
    stored = _stored_features(metadata)
    return stored if stored or _has_features(metadata) else None


def _raw_features(metadata: Mapping[Any, Any] | None) -> Any:
    if not metadata:
        return None
    raw = metadata.get(METADATA_KEY.encode(), metadata.get(METADATA_KEY))
    if raw is None:
        return None
    try:
        document = json.loads(raw)
    except ValueError as error:
        raise FeatureError(
            f"The {METADATA_KEY!r} schema metadata is not JSON: {raw[:200]!r}"
        ) from error
    info = document.get("info") if isinstance(document, dict) else None
    return info.get("features") if isinstance(info, dict) else None


def _has_features(metadata: Mapping[Any, Any] | None) -> bool:
    return isinstance(_raw_features(metadata), dict)


def _stored_features(metadata: Mapping[Any, Any] | None) -> Features:
    raw = _raw_features(metadata)
    out = Features()
    if not isinstance(raw, dict):
        return out
    columns: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    for name, form in columns.items():
        try:
            feature = feature_from_dict(form)
        except FeatureError as error:
            unsupported = _unsupported_types(form)
            if not unsupported:
                raise
            warnings.warn(
                f"Column {name!r} is stored as {sorted(unsupported)} of the datasets library, "
                "which dagster_ds does not model; its feature is inferred from its Arrow type "
                f"instead ({error}).",
                UnsupportedFeatureWarning,
                stacklevel=3,
            )
            continue
        dict.__setitem__(out, name, feature)
    return out


def _unsupported_types(form: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(form, dict):
        fields: dict[str, Any] = form  # pyright: ignore[reportUnknownVariableType]
        if fields.get("_type") in ANCHOR_ONLY_TYPES:
            found.add(fields["_type"])
        for value in fields.values():
            found |= _unsupported_types(value)
    elif isinstance(form, list):
        for value in form:  # pyright: ignore[reportUnknownVariableType]
            found |= _unsupported_types(value)
    return found
