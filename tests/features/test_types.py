"""Feature types and Features methods behave as the anchor documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets as hf
import pytest

import dagster_ds.features as ds
from dagster_ds.errors import ClassLabelError, ColumnMismatchError, FeatureError
from dagster_ds.features import ClassLabel, Features, Json, LargeList, List, Value

NAMES = ["neg", "pos", "mixed"]


@pytest.mark.parametrize("value", ["neg", "mixed", " pos ", "1", "-1", ["pos", "neg"], ("mixed",)])
def test_str2int_matches_the_anchor(value: Any) -> None:
    assert ClassLabel(names=NAMES).str2int(value) == hf.ClassLabel(names=NAMES).str2int(value)


@pytest.mark.parametrize("value", [0, 2, [2, 0, 1], (1,)])
def test_int2str_matches_the_anchor(value: Any) -> None:
    assert ClassLabel(names=NAMES).int2str(value) == hf.ClassLabel(names=NAMES).int2str(value)


@pytest.mark.parametrize("value", ["maybe", "3", "-2", ["neg", "nope"]])
def test_str2int_rejects_unknown_names_as_the_anchor_does(value: Any) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the anchor raises a bare ValueError
        hf.ClassLabel(names=NAMES).str2int(value)
    with pytest.raises(ClassLabelError, match="not one of the ClassLabel names"):
        ClassLabel(names=NAMES).str2int(value)


@pytest.mark.parametrize("value", [3, -1, [0, 7]])
def test_int2str_rejects_out_of_range_as_the_anchor_does(value: Any) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the anchor raises a bare ValueError
        hf.ClassLabel(names=NAMES).int2str(value)
    with pytest.raises(ClassLabelError, match="labels run from 0 to 2"):
        ClassLabel(names=NAMES).int2str(value)


def test_class_label_sources(tmp_path: Path) -> None:
    names_file = tmp_path / "names.txt"
    names_file.write_text("neg\n\npos \nmixed\n")
    from_file = ClassLabel(names_file=str(names_file))
    assert from_file.names == NAMES == hf.ClassLabel(names_file=str(names_file)).names
    assert ClassLabel(num_classes=2) == ClassLabel(names=["0", "1"])
    assert ClassLabel(num_classes=3, names=NAMES).num_classes == 3
    assert repr(ClassLabel(names=NAMES)) == repr(hf.ClassLabel(names=NAMES))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "num_classes, names or names_file"),
        ({"names": ["a", "a"]}, "duplicated: \\['a'\\]"),
        ({"names": ["a"], "num_classes": 2}, "num_classes=2 but 1 names"),
        ({"names": "ab"}, "must be a list of strings"),
    ],
)
def test_class_label_rejects_bad_definitions(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(FeatureError, match=message):
        ClassLabel(**kwargs)


def _both(m: Any) -> Any:
    return m.Features(
        {
            "label": m.ClassLabel(names=NAMES),
            "tags": m.List(m.ClassLabel(names=["a", "b"])),
            "n": m.Value("int32"),
            "s": {"x": m.Value("float32"), "y": m.ClassLabel(names=["a", "b"])},
            "plain": m.List(m.Value("int64")),
        }
    )


EXAMPLES = [
    {"label": "pos", "tags": ["b", "a"], "n": "3", "s": {"x": 1, "y": "b"}, "plain": [1, 2]},
    {"label": 2, "tags": [], "n": 4, "s": None, "plain": None},
    {"label": None, "tags": None, "n": None, "s": {"x": None, "y": 1}, "plain": ["5"]},
]


@pytest.mark.parametrize("example", EXAMPLES)
def test_encode_example_matches_the_anchor(example: dict[str, Any]) -> None:
    assert _both(ds).encode_example(example) == _both(hf).encode_example(example)


def test_encode_batch_matches_the_anchor() -> None:
    batch = {name: [example[name] for example in EXAMPLES] for name in EXAMPLES[0]}
    assert _both(ds).encode_batch(batch) == _both(hf).encode_batch(batch)
    with pytest.raises(ColumnMismatchError, match=r"missing \['plain'\]"):
        _both(ds).encode_batch({k: v for k, v in batch.items() if k != "plain"})


def test_encode_example_rejects_unknown_labels() -> None:
    with pytest.raises(ClassLabelError, match="'maybe'"):
        Features({"label": ClassLabel(names=NAMES)}).encode_example({"label": "maybe"})
    with pytest.raises(ClassLabelError, match="Invalid class label 5"):
        Features({"label": ClassLabel(names=NAMES)}).encode_example({"label": 5})


def test_reorder_fields_as_matches_the_anchor() -> None:
    def build(m: Any, order: list[str]) -> Any:
        fields = {
            "a": m.Value("string"),
            "b": m.List(m.Value("int8")),
            "c": m.ClassLabel(names=["x"]),
        }
        return m.Features(
            {"root": m.List({key: fields[key] for key in order}), "z": m.Value("bool")}
        )

    def target(m: Any) -> Any:
        other = build(m, ["c", "a", "b"])
        return m.Features({"z": other["z"], "root": other["root"]})

    mine = build(ds, ["a", "b", "c"])
    assert mine.type != target(ds).type
    reordered = mine.reorder_fields_as(target(ds))
    assert reordered.type == target(ds).type
    anchor = build(hf, ["a", "b", "c"]).reorder_fields_as(target(hf))
    assert reordered.to_dict() == anchor.to_dict()
    assert list(reordered.to_dict()) == list(anchor.to_dict())


def test_reorder_fields_as_names_the_mismatch() -> None:
    with pytest.raises(FeatureError, match=r"at root: \['a'\] are missing from the target"):
        Features({"root": {"a": Value("int8")}}).reorder_fields_as({"root": {"b": Value("int8")}})
    with pytest.raises(FeatureError, match="Type mismatch at root"):
        Features({"root": List(Value("int8"))}).reorder_fields_as(
            {"root": LargeList(Value("int8"))}
        )


def test_flatten_matches_the_anchor() -> None:
    def build(m: Any) -> Any:
        return m.Features(
            {
                "id": m.Value("string"),
                "answers": {"text": m.List(m.Value("string")), "start": m.List(m.Value("int32"))},
                "deep": {"a": {"b": {"c": m.Value("int8")}}},
                "tail": m.List({"x": m.Value("int8")}),
            }
        )

    ours = build(ds).flatten()
    assert ours.to_dict() == build(hf).flatten().to_dict()
    # Like Arrow's Table.flatten, flattened columns stay where their parent was.
    assert list(ours) == ["id", "answers.text", "answers.start", "deep.a.b.c", "tail"]
    once = ["id", "answers.text", "answers.start", "deep.a", "tail"]
    assert list(build(ds).flatten(max_depth=1)) == once


def test_equality_and_repr() -> None:
    assert Features({"a": Value("int8"), "b": Json()}) == Features(
        {"b": Json(), "a": Value("int8")}
    )
    assert Value("int8") != Value("int16")
    assert List(Value("int8")) != LargeList(Value("int8"))
    assert List(Value("int8"), length=2) != List(Value("int8"))
    assert ClassLabel(names=["a"]) != Value("int64")
    assert (
        repr(Features({"a": List(Value("int8"), length=2)}))
        == "{'a': List(Value('int8'), length=2)}"
    )


def test_value_encode_example_matches_the_anchor() -> None:
    for dtype, value in [
        ("int8", "3"),
        ("float32", 2),
        ("bool", 1),
        ("string", 5),
        ("binary", b"x"),
    ]:
        assert Value(dtype).encode_example(value) == hf.Value(dtype).encode_example(value)


def test_json_encode_example_matches_the_anchor() -> None:
    example = {"j": {"a": [1, 2.5, "x"]}, "l": ['{"a": 1}'], "n": None}

    def build(m: Any) -> Any:
        return m.Features({"j": m.Json(), "l": m.List(m.Json()), "n": m.Json()})

    assert build(ds).encode_example(example) == build(hf).encode_example(example)
    # Unlike the anchor, every item of a list is encoded, not only when the first one changes.
    assert build(ds).encode_example({"j": "x", "l": ["[1]", "plain", 3], "n": "null"}) == {
        "j": '"x"',
        "l": ["[1]", '"plain"', "3"],
        "n": "null",
    }
