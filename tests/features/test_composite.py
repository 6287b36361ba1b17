"""Array2D-Array5D, Translation and TranslationVariableLanguages, against `datasets`."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from dagster_ds import Dataset, Features, load_dataset
from dagster_ds.features import (
    Array2D,
    Array3D,
    Translation,
    TranslationVariableLanguages,
)

DATA: dict[str, list[Any]] = {
    "m": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
    "c": [[[[1]]], [[[2]]]],
    "t": [{"en": "hi", "fr": "salut"}, {"en": "yes", "fr": "oui"}],
    "v": [{"fr": "bonjour", "en": ["hi", "hello"]}, {"en": "no"}],
}


def _features(module: ModuleType) -> Any:
    return module.Features(
        {
            "m": module.Array2D(shape=(2, 2), dtype="int32"),
            "c": module.Array3D(shape=(1, 1, 1), dtype="int64"),
            "t": module.Translation(languages=["fr", "en"]),
            "v": module.TranslationVariableLanguages(languages=["en", "fr"]),
        }
    )


def _ours() -> Features:
    return Features(
        {
            "m": Array2D(shape=(2, 2), dtype="int32"),
            "c": Array3D(shape=(1, 1, 1), dtype="int64"),
            "t": Translation(languages=["fr", "en"]),
            "v": TranslationVariableLanguages(languages=["en", "fr"]),
        }
    )


def test_the_same_rows_and_feature_forms_as_the_anchor(datasets: ModuleType) -> None:
    ours = Dataset.from_dict(DATA, features=_ours())
    anchor = datasets.Dataset.from_dict(DATA, features=_features(datasets))
    assert ours.to_dict() == anchor.to_dict()
    assert json.loads(json.dumps(ours.features.to_dict())) == json.loads(
        json.dumps(anchor.features.to_dict())
    )
    assert Features.from_dict(anchor.features.to_dict()) == ours.features
    assert ours.features.to_yaml_list() == json.loads(json.dumps(anchor.features._to_yaml_list()))


def test_files_round_trip_with_the_anchor(datasets: ModuleType, tmp_path: Path) -> None:
    anchor = datasets.Dataset.from_dict(DATA, features=_features(datasets))
    anchor.to_parquet(str(tmp_path / "anchor.parquet"))
    back = load_dataset("parquet", data_files=str(tmp_path / "anchor.parquet"), split="train")
    assert back.features == _ours()
    assert back.to_dict() == anchor.to_dict()
    ours = Dataset.from_dict(DATA, features=_ours())
    ours.to_parquet(str(tmp_path / "ours.parquet"))
    read = datasets.load_dataset(
        "parquet", data_files=str(tmp_path / "ours.parquet"), split="train"
    )
    # Same values; arrays come back as nested lists (no Arrow extension type: README).
    assert read.to_dict() == anchor.to_dict()
    assert read.features["t"] == anchor.features["t"]


def test_numpy_values_and_unknown_languages() -> None:
    features = Features({"m": Array2D(shape=(2, 2), dtype="float32")})
    ds = Dataset.from_dict({"m": [np.eye(2)]}, features=features)
    assert ds["m"][0] == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(ValueError, match="not in"):
        Dataset.from_dict(
            {"v": [{"de": "hallo"}]},
            features=Features({"v": TranslationVariableLanguages(languages=["en"])}),
        )
    with pytest.raises(ValueError, match="shape of 2"):
        Array2D(shape=(2,), dtype="int8")
