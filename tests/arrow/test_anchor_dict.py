"""DatasetDict and the newer Dataset arguments, compared with `datasets` itself."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import dagster_ds
from dagster_ds import ClassLabel, Dataset, DatasetDict, Features, load_from_disk
from dagster_ds.arrow._stratify import class_shares


@pytest.fixture
def datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    return datasets


def _splits(module: ModuleType) -> Any:
    return module.DatasetDict(
        {
            "train": module.Dataset.from_dict({"a": [3, 1, 2], "st": [{"x": 1}] * 3}),
            "test": module.Dataset.from_dict({"a": [5, 4], "st": [{"x": 2}] * 2}),
        }
    )


def _to_dicts(splits: Any) -> dict[str, Any]:
    return {name: split.to_dict() for name, split in splits.items()}


PUBLIC = [
    "map", "filter", "sort", "shuffle", "with_format", "set_format", "rename_column",
    "rename_columns", "remove_columns", "select_columns", "cast", "cast_column",
    "flatten_indices", "flatten", "save_to_disk", "set_transform", "with_transform",
    "align_labels_with_mapping", "class_encode_column", "unique", "reset_format",
    "formatted_as", "from_csv", "from_json", "from_parquet", "from_text", "load_from_disk",
    "cleanup_cache_files",
]  # fmt: skip


@pytest.mark.parametrize("name", PUBLIC)
def test_dataset_dict_signatures_are_the_anchors(datasets: ModuleType, name: str) -> None:
    ours = inspect.signature(getattr(DatasetDict, name))
    anchor = inspect.signature(getattr(datasets.DatasetDict, name))
    assert list(ours.parameters)[: len(anchor.parameters)] == list(anchor.parameters)


# The anchor's own sort warns about a pyarrow deprecation.
@pytest.mark.filterwarnings("ignore:Specifying null_placement:FutureWarning")
def test_dataset_dict_methods(datasets: ModuleType, tmp_path: Path) -> None:
    calls = [
        lambda m: _to_dicts(
            _splits(m).sort("a", indices_cache_file_names={"train": None, "test": None})
        ),
        lambda m: _to_dicts(_splits(m).flatten()),
        lambda m: _to_dicts(_splits(m).map(lambda x, s: {"s": s}, with_split=True)),
        lambda m: _to_dicts(
            _splits(m).filter(lambda x: x["a"] > 1, cache_file_names={"train": None, "test": None})
        ),
        lambda m: {k: sorted(v.to_dict()["a"]) for k, v in _splits(m).shuffle(seeds=1).items()},
        lambda m: {
            k: sorted(v["a"][:])
            for k, v in _splits(m).shuffle(seeds={"train": 1, "test": 2}).items()
        },
        lambda m: _splits(m).unique("a"),
        lambda m: _to_dicts(_splits(m).with_transform(lambda b: {"b": b["a"]})),
        lambda m: _splits(m).with_format("numpy")["train"].format["type"],
    ]
    for call in calls:
        assert call(dagster_ds) == call(datasets)
    ours, anchor = _splits(dagster_ds), _splits(datasets)
    ours.set_format("numpy")
    anchor.set_format("numpy")
    assert type(ours["train"][:]["a"]) is type(anchor["train"][:]["a"])
    ours.set_transform(lambda b: {"b": b["a"]})
    anchor.set_transform(lambda b: {"b": b["a"]})
    assert ours["test"][0] == anchor["test"][0] == {"b": 5}


def test_dataset_dict_save_to_disk_round_trips_with_the_anchor(
    datasets: ModuleType, tmp_path: Path
) -> None:
    _splits(dagster_ds).save_to_disk(str(tmp_path / "ours"))
    _splits(datasets).save_to_disk(str(tmp_path / "anchor"))
    assert _to_dicts(datasets.load_from_disk(str(tmp_path / "ours"))) == _to_dicts(
        _splits(datasets)
    )
    back = load_from_disk(str(tmp_path / "anchor"))
    assert isinstance(back, DatasetDict)
    assert _to_dicts(back) == _to_dicts(_splits(datasets))
    assert not list(tmp_path.glob("*.saving-*"))


def test_dataset_dict_class_encode_and_align(datasets: ModuleType) -> None:
    def labelled(module: ModuleType) -> Any:
        return module.DatasetDict(
            {
                "train": module.Dataset.from_dict({"c": ["x", "y"]}),
                "test": module.Dataset.from_dict({"c": ["z", "x"]}),
            }
        )

    ours = labelled(dagster_ds).class_encode_column("c")
    anchor = labelled(datasets).class_encode_column("c")
    # The anchor encodes each split on its own ('x' is 0 in both, but 'z' is 2 in
    # train's names and 1 in test's); ours gives every split the same names (README).
    assert anchor["test"].features["c"].names == ["x", "z"]
    assert ours["train"].features["c"] == ours["test"].features["c"]
    assert ours["test"].features["c"].names == ["x", "y", "z"]
    assert _to_dicts(ours) == {"train": {"c": [0, 1]}, "test": {"c": [2, 0]}}
    mapping = {"Z": 0, "Y": 1, "X": 2}
    aligned = ours.align_labels_with_mapping(mapping, "c")
    assert _to_dicts(aligned) == {"train": {"c": [2, 1]}, "test": {"c": [0, 2]}}
    anchor_train = labelled(datasets)["train"].class_encode_column("c")
    assert (
        anchor_train.align_labels_with_mapping(mapping, "c").to_dict() == aligned["train"].to_dict()
    )


def test_dataset_dict_file_constructors(datasets: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("a\n1\n")
    (tmp_path / "b.csv").write_text("a\n2\n")
    paths = {"train": str(tmp_path / "a.csv"), "test": str(tmp_path / "b.csv")}
    ours = DatasetDict.from_csv(paths)
    assert _to_dicts(ours) == _to_dicts(datasets.DatasetDict.from_csv(paths))
    assert ours["test"].split == "test"


def test_a_dataset_dict_as_a_context_manager() -> None:
    with _splits(dagster_ds) as splits:
        assert splits.num_rows == {"train": 3, "test": 2}


def test_align_labels_of_a_list_of_class_labels(datasets: ModuleType) -> None:
    def make(module: ModuleType) -> Any:
        label = module.ClassLabel(names=["a", "b"])
        features = module.Features({"l": module.List(label)})
        return module.Dataset.from_dict({"l": [[0, 1], [1]]}, features=features)

    mapping = {"B": 0, "A": 1}
    ours = make(dagster_ds).align_labels_with_mapping(mapping, "l")
    # The anchor 5.2 fails here (NameError: 'Sequence' in align_labels_with_mapping).
    with pytest.raises(NameError):
        make(datasets).align_labels_with_mapping(mapping, "l")
    assert ours.to_dict() == {"l": [[1, 0], [0]]}
    assert ours.features["l"] == dagster_ds.List(ClassLabel(names=["B", "A"]))


def test_stratified_split_keeps_class_shares(datasets: ModuleType) -> None:
    labels = [0] * 60 + [1] * 30 + [2] * 10
    features = Features({"l": ClassLabel(names=["a", "b", "c"])})
    ours = Dataset.from_dict({"l": labels}, features=features).train_test_split(
        test_size=0.2, stratify_by_column="l", seed=3
    )
    anchor = datasets.Dataset.from_dict(
        {"l": labels}, features=datasets.Features({"l": datasets.ClassLabel(names=["a", "b", "c"])})
    ).train_test_split(test_size=0.2, stratify_by_column="l", seed=3)
    assert ours.num_rows == anchor.num_rows == {"train": 80, "test": 20}
    for split in ("train", "test"):
        assert class_shares(ours[split], "l") == pytest.approx(
            {k: v for k, v in class_shares(Dataset.from_dict(anchor[split].to_dict()), "l").items()}
        )
    assert sorted(ours["train"]["l"][:] + ours["test"]["l"][:]) == labels
    with pytest.raises(ValueError, match="ClassLabel"):
        Dataset.from_dict({"l": labels}).train_test_split(test_size=0.2, stratify_by_column="l")


def test_newer_dataset_arguments(datasets: ModuleType) -> None:
    data = {"a": [1, 2, 3]}
    calls = [
        lambda m: (
            m.Dataset.from_dict(data).filter(lambda x, r: r is None, with_rank=True).to_dict()
        ),
        lambda m: m.Dataset.from_dict(data).map(lambda x, r: {"r": r}, with_rank=True).to_dict(),
        lambda m: m.Dataset.from_dict(data).shard(2, 0, indices_cache_file_name=None).to_dict(),
        lambda m: list(m.Dataset.from_dict(data).to_dict(batch_size=2, batched=True)),
        lambda m: [
            f.shape for f in m.Dataset.from_dict(data).to_pandas(batch_size=2, batched=True)
        ],
        lambda m: m.Dataset.from_dict(data).unique("a"),
        lambda m: m.Dataset.from_dict({"j": [{"a": 1}, [1]]}, on_mixed_types="use_json")["j"][:],
    ]
    for call in calls:
        assert call(dagster_ds) == call(datasets)


def test_map_on_mixed_types_use_json() -> None:
    ds = Dataset.from_dict({"a": [1, 2]})

    def mixed(example: dict[str, Any]) -> dict[str, Any]:
        return {"j": {"k": 1} if example["a"] == 1 else [1], "n": example["a"]}

    out = ds.map(mixed, on_mixed_types="use_json")
    assert out["j"][:] == [{"k": 1}, [1]]  # stored as JSON text, decoded on read
    assert out["n"][:] == [1, 2]
    batched = ds.map(lambda b: {"j": [1, "x"]}, batched=True, on_mixed_types="use_json")
    assert batched["j"][:] == [1, "x"]
    with pytest.raises(dagster_ds.TransformOutputError):
        ds.map(mixed)
