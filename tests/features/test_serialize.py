"""The JSON and YAML forms match what `datasets` writes and reads, both ways."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets as hf
import pytest
import yaml
from datasets.info import DatasetInfo, DatasetInfosDict

from dagster_ds.errors import FeatureError
from dagster_ds.features import ClassLabel, Features, List, Sequence, Value

from ._cases import feature_cases

CASES = feature_cases()


def _form(anchor: hf.Features) -> dict[str, Any]:
    form: dict[str, Any] = anchor.to_dict()  # pyright: ignore[reportAssignmentType]
    return form


IDS = [case[0] for case in CASES]


@pytest.mark.parametrize(("ours", "anchor"), [case[1:] for case in CASES], ids=IDS)
def test_to_dict_is_the_anchors(ours: Features, anchor: hf.Features) -> None:
    assert json.dumps(ours.to_dict()) == json.dumps(anchor.to_dict())


@pytest.mark.parametrize(("ours", "anchor"), [case[1:] for case in CASES], ids=IDS)
def test_from_dict_reads_the_anchors(ours: Features, anchor: hf.Features) -> None:
    read = Features.from_dict(_form(anchor))
    assert read == ours
    assert list(read) == list(ours)
    assert hf.Features.from_dict(ours.to_dict()) == anchor


@pytest.mark.parametrize(("ours", "anchor"), [case[1:] for case in CASES], ids=IDS)
def test_yaml_list_is_the_anchors(ours: Features, anchor: hf.Features) -> None:
    assert ours.to_yaml_list() == anchor._to_yaml_list()
    assert Features.from_yaml_list(anchor._to_yaml_list()) == ours
    assert hf.Features._from_yaml_list(ours.to_yaml_list()) == anchor


def test_reprs_are_the_anchors() -> None:
    for _, ours, anchor in CASES:
        assert repr(ours) == repr(anchor)


def test_older_anchor_forms_are_read() -> None:
    # datasets 2.x wrote ids, num_classes, names_file and the Sequence type.
    old = {
        "label": {
            "num_classes": 2,
            "names": ["neg", "pos"],
            "names_file": None,
            "id": None,
            "_type": "ClassLabel",
        },
        "tokens": {
            "feature": {"dtype": "string", "id": None, "_type": "Value"},
            "length": -1,
            "id": None,
            "_type": "Sequence",
        },
        "answers": {
            "feature": {"text": {"dtype": "string", "id": None, "_type": "Value"}},
            "length": -1,
            "id": None,
            "_type": "Sequence",
        },
    }
    expected = Features(
        {
            "label": ClassLabel(names=["neg", "pos"]),
            "tokens": List(Value("string")),
            "answers": {"text": List(Value("string"))},
        }
    )
    assert (
        Features.from_dict(old) == expected == Features.from_dict(_form(hf.Features.from_dict(old)))
    )
    legacy_yaml = [{"name": "answers", "sequence": [{"name": "text", "dtype": "string"}]}]
    assert Features.from_yaml_list(legacy_yaml) == Features(
        {"answers": {"text": List(Value("string"))}}
    )
    assert Features.from_yaml_list(legacy_yaml) == Features.from_dict(
        _form(hf.Features._from_yaml_list(legacy_yaml))
    )


def _write_card(folder: Path, features_yaml: list[dict[str, Any]]) -> None:
    card = {
        "dataset_info": {
            "features": features_yaml,
            "splits": [{"name": "train", "num_examples": 1}],
        }
    }
    folder.joinpath("README.md").write_text(f"---\n{yaml.safe_dump(card, sort_keys=False)}---\n")


def _read_card(folder: Path) -> dict[str, Any]:
    text = folder.joinpath("README.md").read_text()
    return yaml.safe_load(text.split("---\n")[1])


def test_a_card_we_write_is_read_by_the_anchor(tmp_path: Path) -> None:
    _, ours, anchor = next(case for case in CASES if case[0] == "nested")
    _write_card(tmp_path, ours.to_yaml_list())
    infos = DatasetInfosDict.from_directory(str(tmp_path))
    assert infos["default"].features == anchor


def test_a_card_the_anchor_writes_is_read_by_us(tmp_path: Path) -> None:
    _, ours, anchor = next(case for case in CASES if case[0] == "nested")
    DatasetInfosDict({"default": DatasetInfo(features=anchor)}).write_to_directory(str(tmp_path))
    assert Features.from_yaml_list(_read_card(tmp_path)["dataset_info"]["features"]) == ours


def test_sequence_of_a_dict_is_a_dict_of_lists() -> None:
    made = Sequence({"a": Value("int8"), "b": Value("string")}, length=2)
    assert made == {"a": List(Value("int8"), length=2), "b": List(Value("string"), length=2)}
    assert isinstance(Sequence(Value("int8")), List)
    assert isinstance(List(Value("int8")), Sequence)
    assert Sequence({"a": List(Value("int8"))}) == List({"a": List(Value("int8"))})


def test_legacy_list_spelling_becomes_list() -> None:
    features = Features({"a": [Value("int8")], "b": {"c": [[Value("string")]]}})
    assert features == Features({"a": List(Value("int8")), "b": {"c": List(List(Value("string")))}})
    features["d"] = [Value("bool")]
    assert features["d"] == List(Value("bool"))


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"x": {"_type": "Video"}}, "'Video' of the datasets library is not supported"),
        ({"x": {"_type": "Nope"}}, "Unknown feature type 'Nope'"),
        ({"x": {"dtype": "int31", "_type": "Value"}}, "Unknown dtype 'int31'"),
        ({"x": {"_type": "List"}}, "lacks the 'feature' key"),
    ],
)
def test_bad_forms_raise_clear_errors(form: dict[str, Any], message: str) -> None:
    with pytest.raises(FeatureError, match=message):
        Features.from_dict(form)


def test_yaml_class_label_ids_must_be_complete() -> None:
    with pytest.raises(FeatureError, match="every id from 0 to 2"):
        Features.from_yaml_list(
            [{"name": "l", "dtype": {"class_label": {"names": {"0": "a", "2": "c"}}}}]
        )


def test_copy_is_deep_and_equal() -> None:
    features = Features({"a": {"b": ClassLabel(names=["x"])}})
    copied = features.copy()
    assert copied == features
    inner, copied_inner = features["a"], copied["a"]
    assert isinstance(inner, dict)
    assert isinstance(copied_inner, dict)
    assert copied_inner is not inner
    assert copied_inner["b"] is not inner["b"]


def test_a_field_named_type_round_trips() -> None:
    # The anchor reads it from JSON but fails to write it as YAML; we do both.
    features = Features({"_type": Value("string"), "s": {"_type": List(Value("int8"))}})
    assert hf.Features.from_dict(features.to_dict()).to_dict() == features.to_dict()
    assert Features.from_dict(features.to_dict()) == features
    assert Features.from_yaml_list(features.to_yaml_list()) == features
