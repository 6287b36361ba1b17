"""Casting Arrow data: the anchor's results where it succeeds, clear errors where values change."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import datasets as hf
import pyarrow as pa
import pytest
from datasets.table import InMemoryTable

import dagster_ds.features as ds
from dagster_ds.errors import CastError, ColumnMismatchError
from dagster_ds.features import ClassLabel, Features, List, Value, cast_array, cast_table

Build = Callable[[Any], Any]

ALLOWED: list[tuple[str, pa.Array | pa.ChunkedArray, Build]] = [
    ("int-0-1-to-bool", pa.array([0, 1, None, 1], pa.int32()), lambda m: m.Value("bool")),
    ("integral-float-to-int", pa.array([1.0, -2.0, None]), lambda m: m.Value("int64")),
    ("digit-strings-to-int", pa.array(["1", "-20", None]), lambda m: m.Value("int32")),
    ("strings-to-float", pa.array(["1.5", "1e3", None]), lambda m: m.Value("float64")),
    ("strings-to-bool", pa.array(["true", "false", "1", "0"]), lambda m: m.Value("bool")),
    ("int-to-string", pa.array([1, None, 30]), lambda m: m.Value("string")),
    ("int-to-float32", pa.array([1, 2**20]), lambda m: m.Value("float32")),
    ("double-to-float", pa.array([0.5, None]), lambda m: m.Value("float32")),
    ("string-to-large", pa.array(["a", None]), lambda m: m.Value("large_string")),
    (
        "ms-to-us-tz",
        pa.array([1, None], pa.timestamp("ms")),
        lambda m: m.Value("timestamp[us, tz=UTC]"),
    ),
    ("midnight-to-date", pa.array([86_400_000], pa.timestamp("ms")), lambda m: m.Value("date32")),
    ("nulls-to-string", pa.nulls(3), lambda m: m.Value("string")),
    ("nulls-to-list", pa.nulls(2), lambda m: m.List(m.Value("int8"))),
    (
        "names-to-label",
        pa.array(["pos", "neg", None, "pos"]),
        lambda m: m.ClassLabel(names=["neg", "pos"]),
    ),
    ("spaced-names", pa.array([" pos", "neg ", "1"]), lambda m: m.ClassLabel(names=["neg", "pos"])),
    (
        "ints-to-label",
        pa.array([0, 1, -1, None], pa.int8()),
        lambda m: m.ClassLabel(names=["neg", "pos"]),
    ),
    ("label-to-string", pa.array([0, 1]), lambda m: m.Value("string")),
    (
        "dictionary-names",
        pa.array(["b", "a", "b"]).dictionary_encode(),
        lambda m: m.ClassLabel(names=["a", "b"]),
    ),
    (
        "dictionary-to-string",
        pa.array(["b", None]).dictionary_encode(),
        lambda m: m.Value("string"),
    ),
    (
        "list-to-fixed",
        pa.array([[1, 2], None, [3, 4]]),
        lambda m: m.List(m.Value("int8"), length=2),
    ),
    ("list-to-large", pa.array([[1], None, []]), lambda m: m.LargeList(m.Value("int32"))),
    (
        "fixed-to-list",
        pa.array([[1, 2], None], pa.list_(pa.int64(), 2)),
        lambda m: m.List(m.Value("float64")),
    ),
    (
        "large-to-list",
        pa.array([["a"], []], pa.large_list(pa.string())),
        lambda m: m.List(m.Value("string")),
    ),
    (
        "sliced-list",
        pa.array([[9], [1, 2], None, [3]]).slice(1),
        lambda m: m.List(m.Value("int16")),
    ),
    (
        "struct-reorder-and-cast",
        pa.array([{"a": 1, "b": "x"}, None, {"a": 2, "b": None}]),
        lambda m: {"b": m.Value("large_string"), "a": m.Value("float64")},
    ),
    (
        "struct-missing-field",
        pa.array([{"a": 1}, {"a": None}]),
        lambda m: {"a": m.Value("int32"), "extra": m.Value("string")},
    ),
    (
        "nested-labels",
        pa.array([[{"tag": "b", "ids": [1, 2]}], [], None, [{"tag": None, "ids": None}]]),
        lambda m: m.List({"tag": m.ClassLabel(names=["a", "b"]), "ids": m.List(m.Value("int8"))}),
    ),
    ("json-text", pa.array(['{"a": 1}', None, "[1, 2]"]), lambda m: m.Json()),
    ("ints-to-json", pa.array([1, None, -3]), lambda m: m.Json()),
    ("bools-to-json", pa.array([True, None]), lambda m: m.Json()),
    (
        "chunked",
        pa.chunked_array([pa.array([0, 1], pa.int64()), pa.array([1, None], pa.int64())]),
        lambda m: m.Value("bool"),
    ),
]


def _table(name: str, column: pa.Array | pa.ChunkedArray) -> pa.Table:
    return pa.Table.from_arrays([column], names=[name])  # pyright: ignore[reportArgumentType]


def _anchor_cast(column: pa.Array | pa.ChunkedArray, feature: Any) -> pa.Table:
    dataset = hf.Dataset(InMemoryTable(_table("c", column)))
    return dataset.cast(hf.Features({"c": feature})).data.table


@pytest.mark.parametrize(
    ("column", "build"), [case[1:] for case in ALLOWED], ids=[c[0] for c in ALLOWED]
)
def test_allowed_casts_give_the_anchors_result(column: pa.Array, build: Build) -> None:
    ours = cast_table(_table("c", column), Features({"c": build(ds)}))
    anchor = _anchor_cast(column, build(hf))
    assert ours.schema.equals(anchor.schema)
    assert (
        Features.from_arrow_schema(ours.schema).to_dict()
        == hf.Features.from_arrow_schema(anchor.schema).to_dict()
    )
    assert ours.column("c").to_pylist() == anchor.column("c").to_pylist()
    ours.validate(full=True)


def test_cast_array_keeps_chunks_and_plain_arrays() -> None:
    chunked = pa.chunked_array([pa.array([1, 2]), pa.array([3])])
    cast = cast_array(chunked, Value("int8"))
    assert isinstance(cast, pa.ChunkedArray)
    assert [len(chunk) for chunk in cast.chunks] == [2, 1]
    plain = cast_array(pa.array(["a"]), ClassLabel(names=["a"]))
    assert isinstance(plain, pa.Array)
    assert plain.to_pylist() == [0]
    empty = cast_array(pa.chunked_array([], pa.int64()), Value("string"))
    assert empty.type == pa.string()
    assert len(empty) == 0


def test_cast_table_orders_columns_as_the_features_and_keeps_their_metadata() -> None:
    table = pa.table({"b": ["neg"], "a": [1]})
    features = Features({"a": Value("int8"), "b": ClassLabel(names=["neg", "pos"])})
    cast = cast_table(table, features)
    assert cast.column_names == ["a", "b"]
    assert Features.from_arrow_schema(cast.schema) == features
    batch = cast_table(table.to_batches()[0], features)
    assert isinstance(batch, pa.RecordBatch)
    assert batch.schema.equals(cast.schema, check_metadata=True)


def test_identity_cast_is_zero_copy() -> None:
    column = pa.array([[1, 2], [3]])
    assert cast_array(column, List(Value("int64"))) is column


def _error(column: pa.Array | pa.ChunkedArray, feature: Any, name: str = "c") -> CastError:
    with pytest.raises(CastError) as caught:
        cast_table(_table(name, column), Features({name: feature}))
    return caught.value


def test_int_to_bool_refuses_a_two() -> None:
    column = pa.array([0, 1, 1, 0, None, 2, 1], pa.int32())
    # The anchor silently turns the 2 into True.
    assert _anchor_cast(column, hf.Value("bool")).column("c").to_pylist()[5] is True
    error = _error(column, Value("bool"), name="flag")
    message = str(error)
    for part in ("'flag'", "int32", "bool", "row 5", "value 2", "map the column first"):
        assert part in message
    assert (error.column, error.source, error.target, error.row, error.value) == (
        "flag",
        "int32",
        "bool",
        5,
        2,
    )


@pytest.mark.parametrize(
    ("column", "feature", "row", "value", "fix"),
    [
        (pa.array([1.0, 2.5]), Value("int64"), 1, 2.5, "round them"),
        (pa.array(["1", "2", "x3"]), Value("int32"), 2, "x3", "clean the column"),
        (pa.array([1, 300]), Value("int8"), 1, 300, "wider type"),
        (pa.array([0.0, 0.5]), Value("bool"), 1, 0.5, "map the column first"),
        (pa.array([1e300]), Value("float32"), 0, 1e300, "would become inf"),
        (
            pa.array([1.0, 1.234]),
            Value("decimal128(5, 2)"),
            1,
            1.234,
            "would become Decimal('1.23')",
        ),
        (
            pa.array([1], pa.timestamp("s")),
            Value("date32"),
            0,
            datetime.datetime(1970, 1, 1, 0, 0, 1),
            "would become",
        ),
        (
            pa.array(["neg", "maybe"]),
            ClassLabel(names=["neg", "pos"]),
            1,
            "maybe",
            "ClassLabel names",
        ),
        (pa.array(["neg", "7"]), ClassLabel(names=["neg", "pos"]), 1, "7", "ClassLabel names"),
        (pa.array([0, 2]), ClassLabel(names=["neg", "pos"]), 1, 2, "-1 for no label"),
        (pa.array([0, -2]), ClassLabel(names=["neg", "pos"]), 1, -2, "-1 for no label"),
        (pa.array([1, 2]), Value("null"), 0, 1, "only nulls"),
        (pa.array(['{"a": 1}', "{oops"]), ds.Json(), 1, "{oops", "json.dumps"),
        (pa.array([1.5, float("inf")]), ds.Json(), 1, float("inf"), "Replace NaN"),
    ],
)
def test_lossy_values_are_refused_with_row_and_value(
    column: pa.Array, feature: Any, row: int, value: Any, fix: str
) -> None:
    error = _error(column, feature)
    assert (error.row, error.value) == (row, value)
    assert f"row {row} has value {value!r}" in str(error)
    assert fix in str(error)


def test_list_length_mismatch_names_the_row() -> None:
    error = _error(pa.array([[1, 2], None, [3]]), List(Value("int8"), length=2))
    assert error.row == 2
    assert "a list of 1 items where 2 are required" in str(error)


def test_nested_errors_name_the_path_and_the_table_row() -> None:
    column = pa.chunked_array(
        [
            pa.array([{"spans": [[1], [2]]}]),
            pa.array([{"spans": [[3]]}, None, {"spans": [[], [4, 900]]}]),
        ]
    )
    error = _error(column, {"spans": List(List(Value("int8")))}, name="doc")
    assert error.column == "doc.spans[][]"
    assert error.row == 3
    assert error.value == 900
    assert "column 'doc.spans[][]' from int64 to int8: row 3 has value 900" in str(error)


@pytest.mark.parametrize(
    ("column", "feature", "reason"),
    [
        (pa.array([[1]]), Value("int64"), "nested data does not convert to a scalar"),
        (pa.array([1]), List(Value("int64")), "only lists convert"),
        (pa.array([1]), {"a": Value("int64")}, "only a struct converts"),
        (
            pa.array([{"a": 1, "z": 2}]),
            {"a": Value("int64")},
            "its fields ['z'] are not in the features",
        ),
        (pa.array([datetime.date(2020, 1, 1)]), Value("int8"), "Arrow has no conversion"),
        (pa.array([datetime.date(2020, 1, 1)]), ds.Json(), "only JSON text"),
    ],
)
def test_impossible_casts_are_refused_for_the_types(
    column: pa.Array, feature: Any, reason: str
) -> None:
    error = _error(column, feature)
    assert error.row is None
    assert reason in str(error)
    assert "column 'c'" in str(error)


def test_column_mismatch_lists_missing_and_extra() -> None:
    table = pa.table({"a": [1], "b": [2], "c": [3]})
    with pytest.raises(ColumnMismatchError) as caught:
        cast_table(table, Features({"a": Value("int8"), "d": Value("int8")}))
    assert caught.value.missing == ["d"]
    assert caught.value.extra == ["b", "c"]
    assert "missing ['d']" in str(caught.value)
    assert "extra ['b', 'c']" in str(caught.value)
    assert isinstance(caught.value, CastError)
    assert isinstance(caught.value, ValueError)
