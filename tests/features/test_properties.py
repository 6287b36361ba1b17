"""Round trips over generated nested features (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

import datasets as hf
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds.features import ClassLabel, Features, Json, LargeList, List, Value, cast_table

from ._cases import DTYPES

# No control characters: pyarrow truncates a struct field name at NUL when the anchor makes
# its schema (pa.schema(struct)), so such names cannot be compared with it. No "_type": the
# anchor's YAML form takes a field of that name for a feature's type tag (and fails).
NAMES = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=8
).filter(lambda name: name != "_type")
LEAVES = st.one_of(
    st.sampled_from(DTYPES).map(Value),
    st.lists(NAMES, min_size=1, max_size=4, unique=True).map(lambda names: ClassLabel(names=names)),
    st.builds(Json, decode=st.booleans()),
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(List, children, length=st.sampled_from([-1, -1, 0, 2])),
        st.builds(LargeList, children),
        st.dictionaries(NAMES, children, min_size=1, max_size=3),
    )


FEATURE = st.recursive(LEAVES, _extend, max_leaves=8)
FEATURES = st.dictionaries(NAMES, FEATURE, min_size=1, max_size=4).map(Features)


def _without_labels(feature: Any) -> Any:
    if isinstance(feature, ClassLabel):
        return Value("int64")
    if isinstance(feature, dict):
        return {name: _without_labels(sub) for name, sub in feature.items()}
    if isinstance(feature, List):
        return List(_without_labels(feature.feature), length=feature.length)
    if isinstance(feature, LargeList):
        return LargeList(_without_labels(feature.feature))
    if isinstance(feature, Json):
        return Json()
    return feature


@settings(max_examples=150, deadline=None)
@given(FEATURES)
def test_to_dict_from_dict_round_trip(features: Features) -> None:
    form = features.to_dict()
    back = Features.from_dict(json.loads(json.dumps(form)))
    assert back == features
    assert back.to_dict() == form
    assert back.type == features.type


@settings(max_examples=150, deadline=None)
@given(FEATURES)
def test_yaml_list_round_trip(features: Features) -> None:
    assert Features.from_yaml_list(features.to_yaml_list()) == features


@settings(max_examples=150, deadline=None)
@given(FEATURES)
def test_arrow_schema_round_trip(features: Features) -> None:
    schema = features.arrow_schema
    assert Features.from_arrow_schema(schema) == features
    inferred = Features.from_arrow_schema(schema.remove_metadata())
    assert inferred == Features({name: _without_labels(f) for name, f in features.items()})
    assert inferred.type == features.type


@settings(max_examples=60, deadline=None)
@given(FEATURES)
def test_the_anchor_reads_what_we_write(features: Features) -> None:
    anchor = hf.Features.from_dict(features.to_dict())
    assert anchor.to_dict() == features.to_dict()
    assert anchor.arrow_schema.equals(features.arrow_schema, check_metadata=True)
    assert anchor._to_yaml_list() == features.to_yaml_list()


@settings(max_examples=60, deadline=None)
@given(FEATURES)
def test_null_columns_cast_to_any_features(features: Features) -> None:
    table = pa.table({name: pa.nulls(3) for name in features})
    cast = cast_table(table, features)
    assert cast.schema.equals(features.arrow_schema, check_metadata=True)
    cast.validate(full=True)
