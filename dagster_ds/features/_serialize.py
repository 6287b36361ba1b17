"""The anchor's serialised forms of features: the JSON dict and the README YAML list.

JSON form (``dataset_info.json``, Arrow schema metadata), as ``Features.to_dict``::

    {"label": {"names": ["neg", "pos"], "_type": "ClassLabel"},
     "tokens": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"}}

YAML form (a dataset card's ``dataset_info.features``)::

    - name: label
      dtype: {class_label: {names: {'0': neg, '1': pos}}}
    - name: tokens
      list: string

Fields equal to their default (``id: None``, ``length: -1``, ``decode: True``)
are left out, as the anchor's ``asdict`` does.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

from dagster_ds.errors import FeatureError
from dagster_ds.features._audio import Audio
from dagster_ds.features._composite import COMPOSITE_TYPES, Composite, composite_from_form
from dagster_ds.features._image import Image
from dagster_ds.features._media import Media
from dagster_ds.features._types import (
    ClassLabel,
    FeatureType,
    Json,
    LargeList,
    List,
    Sequence,
    Value,
    pickle_as_form,
)

MEDIA_TYPES: dict[str, type[Media]] = {"Audio": Audio, "Image": Image}
# Feature types of the anchor that dagster_ds does not model.
ANCHOR_ONLY_TYPES = frozenset(
    {
        "BioSequence",
        "BioStructure",
        "Mesh",
        "Nifti",
        "Pdf",
        "Video",
    }
)
_LIST_KEYS = ("large_list", "list", "sequence")


# -- JSON form ------------------------------------------------------------------


def feature_to_dict(feature: FeatureType) -> Any:
    """The JSON form of one feature (a dict of features gives a dict of forms)."""
    if isinstance(feature, Mapping):
        fields: Mapping[str, Any] = feature
        return {name: feature_to_dict(sub) for name, sub in fields.items()}
    out: dict[str, Any]
    if isinstance(feature, Value):
        out = {"dtype": feature.dtype}
    elif isinstance(feature, ClassLabel):
        out = {"names": list(feature.names)}
    elif isinstance(feature, List):
        out = {"feature": feature_to_dict(feature.feature)}
        if feature.length != -1:
            out["length"] = feature.length
    elif isinstance(feature, LargeList):
        out = {"feature": feature_to_dict(feature.feature)}
    elif isinstance(feature, Json):  # pyright: ignore[reportUnnecessaryIsInstance]
        out = {} if feature.decode else {"decode": False}
    elif isinstance(feature, Composite):
        out = feature.to_form()
    else:
        raise FeatureError(f"{feature!r} is not a feature type.")
    if feature.id is not None:
        out["id"] = feature.id
    out["_type"] = feature._type  # pyright: ignore[reportPrivateUsage]
    return out


def feature_from_dict(obj: Any) -> FeatureType:
    """A feature from its JSON form, including forms older anchors wrote.

    Reads ``"id": null``, ClassLabel's ``num_classes``/``names_file`` keys and the
    legacy ``Sequence`` type (a sequence of a dict is a dict of lists).

    Raises:
        FeatureError: a malformed form or an unknown ``_type`` (callers recognise the
            anchor's media and array types through `ANCHOR_ONLY_TYPES`).
    """
    if isinstance(obj, list):
        items: list[Any] = obj  # pyright: ignore[reportUnknownVariableType]
        if len(items) != 1:
            raise FeatureError(f"A list feature holds exactly one item feature, got {items!r}.")
        return List(feature_from_dict(items[0]))
    if not isinstance(obj, Mapping):
        raise FeatureError(f"Expected a serialised feature (a dict), got {obj!r}.")
    fields: Mapping[str, Any] = obj
    kind = fields.get("_type")
    if kind is None or isinstance(kind, Mapping):  # a struct, possibly with a field "_type"
        return {name: feature_from_dict(sub) for name, sub in fields.items()}
    feature_id = fields.get("id")
    if kind == "Value":
        return Value(_required(fields, "dtype", kind), id=feature_id)
    if kind == "ClassLabel":
        names = fields.get("names")
        return ClassLabel(
            num_classes=None if names is not None else fields.get("num_classes"),
            names=names,
            id=feature_id,
        )
    if kind in ("List", "Sequence"):
        length = fields.get("length", -1)
        item = feature_from_dict(_required(fields, "feature", kind))
        if kind == "Sequence":
            made: FeatureType = Sequence(item, length=length, id=feature_id)
            return made
        return List(item, length=length, id=feature_id)
    if kind == "LargeList":
        return LargeList(feature_from_dict(_required(fields, "feature", kind)), id=feature_id)
    if kind == "Json":
        return Json(decode=fields.get("decode", True), id=feature_id)
    if kind in MEDIA_TYPES:
        media: Any = MEDIA_TYPES[kind].from_form(fields)
        return media
    if kind in COMPOSITE_TYPES:
        composite: Any = composite_from_form(kind, fields)
        return composite
    if kind in ANCHOR_ONLY_TYPES:
        raise FeatureError(f"Feature type {kind!r} of the datasets library is not supported yet.")
    raise FeatureError(
        f"Unknown feature type {kind!r}; known types: Value, ClassLabel, List, Sequence, "
        "LargeList, Json, Array2D-Array5D, Translation, TranslationVariableLanguages, Image, "
        "Audio."
    )


def _required(fields: Mapping[str, Any], key: str, kind: str) -> Any:
    if key not in fields:
        raise FeatureError(f"Serialised {kind} feature lacks the {key!r} key: {dict(fields)!r}.")
    return fields[key]


def feature_to_json(feature: FeatureType) -> str:
    """The JSON text of one feature, wrapped so that a bare dict stays a struct."""
    return json.dumps({"feature": feature_to_dict(feature)})


def feature_from_json(text: str) -> FeatureType:
    """The feature `feature_to_json` wrote (used to pickle and hash features)."""
    return feature_from_dict(json.loads(text)["feature"])


pickle_as_form(feature_from_json, feature_to_json)


# -- YAML form ------------------------------------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _simplify(form: dict[str, Any]) -> dict[str, Any]:
    for key in _LIST_KEYS:
        inner = form.get(key)
        if isinstance(inner, dict) and list(inner) in (["dtype"], ["struct"]):  # pyright: ignore[reportUnknownArgumentType]
            form[key] = next(iter(inner.values()))  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    label = form.get("class_label")
    if isinstance(label, dict) and isinstance(label.get("names"), list):  # pyright: ignore[reportUnknownMemberType]
        label["names"] = {str(index): name for index, name in enumerate(label["names"])}  # pyright: ignore[reportUnknownArgumentType]
    return form


def _to_yaml(form: dict[str, Any]) -> dict[str, Any]:
    form = dict(form)
    # A struct may have a field named "_type" (whose form is a dict); the anchor fails on it.
    kind = form.pop("_type") if isinstance(form.get("_type"), str) else None
    if kind in ("List", "LargeList"):
        item = form.pop("feature")
        key = "list" if kind == "List" else "large_list"
        return _simplify({key: _to_yaml(item), **form})
    if kind == "Value":
        return form
    if kind is not None and not form:
        return {"dtype": _snake(kind)}
    if kind is not None:
        return {"dtype": _simplify({_snake(kind): form})}
    return {"struct": [{"name": name, **_to_yaml(sub)} for name, sub in form.items()]}


def to_yaml_list(features: Mapping[str, FeatureType]) -> list[dict[str, Any]]:
    """The YAML form of features, exactly as the anchor writes it in a dataset card."""
    return _to_yaml(feature_to_dict(dict(features)))["struct"]


def _unsimplify(form: dict[str, Any]) -> dict[str, Any]:
    for key in _LIST_KEYS:
        if isinstance(form.get(key), str):
            form[key] = {"dtype": form[key]}
    label = form.get("class_label")
    if isinstance(label, dict) and isinstance(label.get("names"), dict):  # pyright: ignore[reportUnknownMemberType]
        names: dict[Any, str] = label["names"]  # pyright: ignore[reportUnknownVariableType]
        ids = sorted(names, key=int)
        if ids and [int(i) for i in ids] != list(range(int(ids[-1]) + 1)):
            raise FeatureError(
                f"ClassLabel names must cover every id from 0 to {ids[-1]}; got ids {ids!r}."
            )
        label["names"] = [names[i] for i in ids]
    return form


def _is_value_dtype(dtype: str) -> bool:
    try:
        Value(dtype)
    except FeatureError:
        return False
    return True


def _from_yaml(obj: Any) -> Any:
    if isinstance(obj, list):
        entries: list[dict[str, Any]] = obj  # pyright: ignore[reportUnknownVariableType]
        names = [entry.pop("name") for entry in entries]
        return {name: _from_yaml(entry) for name, entry in zip(names, entries, strict=True)}
    if not isinstance(obj, dict):
        raise FeatureError(f"Expected a YAML feature (a dict or a list), got {obj!r}.")
    form: dict[str, Any] = obj  # pyright: ignore[reportUnknownVariableType]
    if not form:
        return {}
    kind = next(iter(form))
    if kind in _LIST_KEYS:
        inner = _unsimplify(form).pop(kind)
        item = _from_yaml(inner)
        if kind == "large_list":
            return {"feature": item, **form, "_type": "LargeList"}
        if kind == "sequence" and isinstance(inner, list):  # a sequence of a struct
            return {name: {"feature": sub, **form, "_type": "List"} for name, sub in item.items()}
        return {"feature": item, **form, "_type": "List"}
    if kind == "struct":
        return _from_yaml(form["struct"])
    if kind == "dtype":
        dtype = form["dtype"]
        if isinstance(dtype, str):
            return (
                {**form, "_type": "Value"} if _is_value_dtype(dtype) else {"_type": _camel(dtype)}
            )
        return _from_yaml(dtype)
    return {"_type": _camel(kind), **_unsimplify(form)[kind]}


def from_yaml_list(yaml_data: list[dict[str, Any]]) -> dict[str, FeatureType]:
    """Features from their YAML form (the inverse of `to_yaml_list`).

    Raises:
        FeatureError: malformed YAML features, or a type dagster_ds does not model.
    """
    form = _from_yaml(copy.deepcopy(yaml_data))
    return {name: feature_from_dict(sub) for name, sub in form.items()}
