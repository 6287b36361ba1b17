"""The dataset card's YAML: what a push changes, and what it keeps."""

from __future__ import annotations

import pytest
import yaml

from dagster_ds.errors import HubFeaturesMismatchError, InvalidArgumentError
from dagster_ds.features import ClassLabel, Features, Value
from dagster_ds.fingerprint import LineageStep
from dagster_ds.hub._card import Card, SplitRecord

FEATURES = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
STEP = LineageStep("map", "b" * 32, ("a" * 32,))

EXISTING = """---
license: mit
tags:
- demo
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
  default: true
---
# My dataset

Written by hand.
"""


def record(name: str, rows: int = 3) -> SplitRecord:
    return SplitRecord(name, rows, 100 * rows, 50 * rows, "b" * 32, (STEP,), num_shards=1)


def push(
    card: Card, config: str, *splits: SplitRecord, replace: bool = False, **kw: object
) -> Card:
    return card.updated(
        config_name=config,
        data_dir=config if config != "default" else "data",
        features=FEATURES,
        splits=list(splits),
        deleted_bytes=0,
        replace_splits=replace,
        set_default=kw.get("set_default"),  # type: ignore[arg-type]
    )


def test_other_keys_and_the_body_are_kept() -> None:
    card = push(Card.parse(EXISTING), "default", record("test"))
    text = card.render()
    assert text.endswith("---\n# My dataset\n\nWritten by hand.\n")
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["license"] == "mit"
    assert header["tags"] == ["demo"]
    assert header["configs"] == [
        {
            "config_name": "default",
            "data_files": [
                {"split": "train", "path": "data/train-*"},
                {"split": "test", "path": "data/test-*"},
            ],
            "default": True,
        }
    ]
    assert Card.parse(text).data == card.data


def test_one_config_is_a_mapping_several_are_a_sorted_list() -> None:
    one = push(Card(), "default", record("train"))
    assert isinstance(one.data["dataset_info"], dict)
    assert "config_name" not in one.data["dataset_info"]
    assert one.data["dataset_info"]["features"] == FEATURES.to_yaml_list()
    two = push(one, "en", record("train", 5))
    infos = two.data["dataset_info"]
    assert [info["config_name"] for info in infos] == ["default", "en"]
    assert two.infos()["en"]["splits"] == [{"name": "train", "num_bytes": 500, "num_examples": 5}]
    assert two.data["dagster_ds"]["configs"]["en"]["splits"]["train"] == {
        "fingerprint": "b" * 32,
        "parents": ["a" * 32],
        "lineage": [STEP.to_dict()],
        "data_dir": "en",
        "num_shards": 1,
    }


def test_replacing_splits_drops_the_configs_others() -> None:
    card = push(Card(), "default", record("train"), record("test"))
    replaced = push(card, "default", record("train", 9), replace=True)
    assert replaced.data_files("default") == {"train": ["data/train-*"]}
    assert list(replaced.pushed("default")) == ["train"]
    assert replaced.infos()["default"]["dataset_size"] == 900


def test_set_default_moves_the_default_flag() -> None:
    card = push(Card(), "en", record("train"))
    card = push(card, "fr", record("train"), set_default=True)
    assert card.default_config() == "fr"
    assert "default" not in card.configs()["en"]
    with pytest.raises(InvalidArgumentError, match="named 'default'"):
        push(push(card, "default", record("train")), "de", record("train"), set_default=True)


def test_a_split_with_other_features_is_refused() -> None:
    card = push(Card(), "default", record("train"))
    with pytest.raises(HubFeaturesMismatchError):
        card.updated(
            config_name="default",
            data_dir="data",
            features=Features({"x": Value("int8")}),
            splits=[record("test")],
            deleted_bytes=0,
            replace_splits=False,
            set_default=None,
        )


def test_a_repository_pushed_before_configs_existed_gets_them() -> None:
    card = Card().updated(
        config_name="default",
        data_dir="data",
        features=FEATURES,
        splits=[record("test")],
        deleted_bytes=0,
        replace_splits=False,
        set_default=None,
        repo_files=["data/train-00000-of-00002-abc123.parquet", "README.md"],
    )
    assert card.data_files("default") == {"train": ["data/train-*"], "test": ["data/test-*"]}
