"""Features to Arrow and back, against `datasets`' own mapping."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import datasets as hf
import pyarrow as pa
import pytest

from dagster_ds.errors import FeatureError
from dagster_ds.features import (
    ClassLabel,
    Features,
    FeatureType,
    Json,
    LargeList,
    List,
    Value,
    arrow_type_to_feature,
    feature_to_arrow_type,
)

from ._cases import feature_cases

CASES = feature_cases()
IDS = [case[0] for case in CASES]


@pytest.mark.parametrize(("ours", "anchor"), [case[1:] for case in CASES], ids=IDS)
def test_arrow_schema_is_the_anchors_with_metadata(ours: Features, anchor: hf.Features) -> None:
    assert ours.arrow_schema.equals(anchor.arrow_schema, check_metadata=True)
    assert ours.type == anchor.type


@pytest.mark.parametrize(("ours", "anchor"), [case[1:] for case in CASES], ids=IDS)
def test_from_arrow_schema_reads_the_anchors(ours: Features, anchor: hf.Features) -> None:
    assert Features.from_arrow_schema(anchor.arrow_schema) == ours
    assert hf.Features.from_arrow_schema(ours.arrow_schema) == anchor


@pytest.mark.parametrize(("ours", "anchor"), [case[1:] for case in CASES], ids=IDS)
def test_inference_without_metadata_is_the_anchors(ours: Features, anchor: hf.Features) -> None:
    bare = anchor.arrow_schema.remove_metadata()
    inferred = Features.from_arrow_schema(bare)
    assert inferred.to_dict() == hf.Features.from_arrow_schema(bare).to_dict()
    assert inferred.type == ours.type


PYTHON_DATA = {
    "ints": [1, None, 3],
    "floats": [1.5, 2.0, None],
    "flags": [True, False, None],
    "texts": ["a", None, "c"],
    "bytes": [b"a", b"b", None],
    "nested": [{"a": 1, "b": ["x"]}, None, {"a": 2, "b": []}],
    "lists": [[1, 2], [], None],
    "deep": [[[1.0]], [[2.0, 3.0]], None],
    "dates": [datetime.date(2020, 1, 1), None, datetime.date(2021, 1, 1)],
    "times": [datetime.datetime(2020, 1, 1, 10), None, None],
    "aware": [datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC), None, None],
    "spans": [datetime.timedelta(seconds=3), None, None],
    "money": [decimal.Decimal("1.25"), None, None],
    "nulls": [None, None, None],
}


def test_inference_from_python_data_is_the_anchors() -> None:
    table = pa.table(PYTHON_DATA)
    ours = Features.from_arrow_schema(table.schema)
    anchor = hf.Dataset.from_dict(PYTHON_DATA).features
    assert ours.to_dict() == anchor.to_dict()
    assert ours["nested"] == {"a": Value("int64"), "b": List(Value("string"))}


@pytest.mark.parametrize(
    ("arrow_type", "feature"),
    [
        (pa.list_(pa.int32()), List(Value("int32"))),
        (pa.large_list(pa.string()), LargeList(Value("string"))),
        (pa.list_(pa.float32(), 3), List(Value("float32"), length=3)),
        (
            pa.struct([("b", pa.bool_()), ("a", pa.int8())]),
            {"b": Value("bool"), "a": Value("int8")},
        ),
        (pa.dictionary(pa.int32(), pa.string()), Value("string")),
        (pa.json_(), Json()),
        (
            pa.list_(pa.struct([("x", pa.list_(pa.int8(), 2))])),
            List({"x": List(Value("int8"), length=2)}),
        ),
    ],
)
def test_type_mapping_both_ways(arrow_type: pa.DataType, feature: FeatureType) -> None:
    assert arrow_type_to_feature(arrow_type) == feature
    anchor_form: dict[str, Any] = hf.Features.from_arrow_schema(  # pyright: ignore[reportAssignmentType]
        pa.schema([("x", arrow_type)])
    ).to_dict()
    assert arrow_type_to_feature(arrow_type) == Features.from_dict(anchor_form)["x"]
    if not pa.types.is_dictionary(arrow_type):
        assert feature_to_arrow_type(feature) == arrow_type


def test_dictionary_column_reads_as_its_values() -> None:
    table = pa.table({"city": pa.array(["a", "b", "a"]).dictionary_encode()})
    assert Features.from_arrow_schema(table.schema) == Features({"city": Value("string")})


@pytest.mark.parametrize(
    "arrow_type",
    [pa.map_(pa.string(), pa.int8()), pa.list_view(pa.int8()), pa.month_day_nano_interval()],
)
def test_types_without_a_feature_raise(arrow_type: pa.DataType) -> None:
    with pytest.raises(FeatureError, match="no Value dtype equivalent"):
        arrow_type_to_feature(arrow_type)


def test_metadata_feature_is_used_only_when_its_type_matches() -> None:
    stored = Features({"label": ClassLabel(names=["a", "b"]), "x": Value("int8")})
    schema = pa.schema([("label", pa.int64()), ("x", pa.int16())]).with_metadata(
        stored.arrow_schema.metadata
    )
    assert Features.from_arrow_schema(schema) == Features(
        {"label": ClassLabel(names=["a", "b"]), "x": Value("int16")}
    )


def test_nullability_does_not_hide_metadata() -> None:
    stored = Features({"label": ClassLabel(names=["a", "b"])})
    field = pa.field("label", pa.int64(), nullable=False)
    schema = pa.schema([field]).with_metadata(stored.arrow_schema.metadata)
    assert Features.from_arrow_schema(schema) == stored


@pytest.mark.parametrize(
    ("dtype", "message"),
    [
        ("int31", "Unknown dtype"),
        ("json", r"Use the Json\(\) feature"),
        ("time32[us]", "time32 takes a unit"),
    ],
)
def test_bad_dtypes_raise(dtype: str, message: str) -> None:
    with pytest.raises(FeatureError, match=message):
        Value(dtype)


def test_value_aliases_are_normalised() -> None:
    assert Value("float") == Value("float32")
    assert Value("double").dtype == hf.Value("double").dtype == "float64"
    assert Value("utf8") == Value("string")
