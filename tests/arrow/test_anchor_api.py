"""The anchor's Dataset API, compared with `datasets` itself: constructors, reshaping,
on-the-fly transforms, scoped formats, the context manager and the torch format."""

from __future__ import annotations

import glob
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import dagster_ds
from dagster_ds import Dataset
from dagster_ds.errors import DatasetReleasedError

DATA: dict[str, list[Any]] = {
    "a": [1, 2, 3],
    "s": ["b", "a", "b"],
    "st": [{"x": 1, "y": "p"}, {"x": 2, "y": "q"}, {"x": 3, "y": "r"}],
}


def _encoded(dataset: Any, column: str) -> tuple[list[str], list[Any]]:
    return dataset.features[column].names, dataset[column][:]


def _scoped_numpy(module: ModuleType) -> tuple[str, Any]:
    ds = module.Dataset.from_dict(DATA)
    with ds.formatted_as("numpy"):
        inside = type(ds[:2]["a"]).__name__
    return inside, ds.format["type"]


def _doubled(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"a2": [value * 2 for value in batch["a"]]}


CASES: dict[str, Callable[[ModuleType], Any]] = {
    "batch": lambda m: m.Dataset.from_dict(DATA).batch(2).to_dict(),
    "batch drop_last": lambda m: m.Dataset.from_dict(DATA).batch(2, drop_last_batch=True).to_dict(),
    "flatten": lambda m: m.Dataset.from_dict(DATA).flatten().to_dict(),
    "repeat": lambda m: m.Dataset.from_dict(DATA).repeat(2)["a"][:],
    "repeat 0": lambda m: m.Dataset.from_dict(DATA).repeat(0).num_rows,
    "add_item": lambda m: (
        m.Dataset.from_dict(DATA).add_item({"a": 4, "s": "c", "st": {"x": 4, "y": "s"}}).to_dict()
    ),
    "class_encode strings": lambda m: _encoded(
        m.Dataset.from_dict(DATA).class_encode_column("s"), "s"
    ),
    "class_encode ints": lambda m: _encoded(
        m.Dataset.from_dict(DATA).class_encode_column("a"), "a"
    ),
    "class_encode nulls": lambda m: _encoded(
        m.Dataset.from_dict({"s": ["x", None, "y"]}).class_encode_column("s"), "s"
    ),
    "class_encode include_nulls": lambda m: _encoded(
        m.Dataset.from_dict({"s": ["x", None, "y"]}).class_encode_column("s", include_nulls=True),
        "s",
    ),
    "with_transform row": lambda m: m.Dataset.from_dict(DATA).with_transform(_doubled)[0],
    "with_transform batch": lambda m: m.Dataset.from_dict(DATA).with_transform(_doubled)[:2],
    "with_transform columns": lambda m: m.Dataset.from_dict(DATA).with_transform(
        _doubled, columns=["a"], output_all_columns=True
    )[0],
    "with_transform format": lambda m: (
        m.Dataset.from_dict(DATA).with_transform(_doubled).format["type"]
    ),
    "formatted_as": _scoped_numpy,
    "torch row": lambda m: {
        k: type(v).__name__
        for k, v in m.Dataset.from_dict({"a": [1, 2], "s": ["x", "y"], "l": [[1, 2], [3, 4]]})
        .with_format("torch")[0]
        .items()
    },
    "torch batch": lambda m: {
        k: str(getattr(v, "shape", v))
        for k, v in m.Dataset.from_dict({"a": [1, 2], "s": ["x", "y"], "l": [[1, 2], [3, 4]]})
        .with_format("torch")[:2]
        .items()
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dataset_methods_behave_as_the_anchors(datasets: ModuleType, case: str) -> None:
    if case.startswith("torch"):
        pytest.importorskip("torch")
    assert CASES[case](dagster_ds) == CASES[case](datasets)


def test_set_transform_in_place(datasets: ModuleType) -> None:
    ours, anchor = Dataset.from_dict(DATA), datasets.Dataset.from_dict(DATA)
    ours.set_transform(_doubled)
    anchor.set_transform(_doubled)
    assert ours[1] == anchor[1] == {"a2": 4}
    ours.set_transform(None)
    assert ours[0]["a"] == 1


def test_a_dataset_as_a_context_manager(datasets: ModuleType) -> None:
    with Dataset.from_dict(DATA) as ours, datasets.Dataset.from_dict(DATA) as anchor:
        assert len(ours) == len(anchor) == 3
    with pytest.raises(DatasetReleasedError, match="with` block"):
        len(ours)


def test_file_constructors(datasets: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("a,b\n1,x\n2,y\n")
    (tmp_path / "b.csv").write_text("a,b\n3,z\n")
    (tmp_path / "a.jsonl").write_text('{"a": 1}\n{"a": 2}\n')
    (tmp_path / "a.json").write_text('{"rows": [{"a": 1}]}')
    (tmp_path / "a.txt").write_text("l1\nl2\n")
    datasets.Dataset.from_dict(DATA).to_parquet(str(tmp_path / "a.parquet"))
    calls: list[Callable[[ModuleType], Any]] = [
        lambda m: m.Dataset.from_csv(str(tmp_path / "a.csv")).to_dict(),
        lambda m: m.Dataset.from_csv([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]).to_dict(),
        lambda m: m.Dataset.from_csv(str(tmp_path / "a.csv"), split="test").split,
        lambda m: m.Dataset.from_json(str(tmp_path / "a.jsonl")).to_dict(),
        lambda m: m.Dataset.from_json(str(tmp_path / "a.json"), field="rows").to_dict(),
        lambda m: m.Dataset.from_text(str(tmp_path / "a.txt")).to_dict(),
        lambda m: m.Dataset.from_parquet(str(tmp_path / "a.parquet"), columns=["a"]).to_dict(),
    ]
    for call in calls:
        assert call(dagster_ds) == call(datasets)


def test_from_file_reads_the_anchors_arrow_files(datasets: ModuleType, tmp_path: Path) -> None:
    label = datasets.ClassLabel(names=["n", "p"])
    saved = datasets.Dataset.from_dict({"l": [0, 1]}, features=datasets.Features({"l": label}))
    saved.save_to_disk(str(tmp_path / "saved"))
    [arrow_file] = glob.glob(str(tmp_path / "saved" / "*.arrow"))
    ours, anchor = Dataset.from_file(arrow_file), datasets.Dataset.from_file(arrow_file)
    assert ours.to_dict() == anchor.to_dict()
    assert ours.features.to_dict() == anchor.features.to_dict()
    with pytest.raises(dagster_ds.MalformedFileError, match="not an Arrow IPC file"):
        Dataset.from_file(str(tmp_path / "saved" / "state.json"))


def test_dataset_info_and_split_names(datasets: ModuleType) -> None:
    ds = Dataset.from_dict(DATA, split=dagster_ds.Split.TRAIN)
    anchor = datasets.Dataset.from_dict(DATA, split=datasets.Split.TRAIN)
    assert ds.split == str(anchor.split) == "train"
    assert ds.info.features == ds.features
    info_features = ds.info.features
    assert info_features is not None
    assert info_features.to_dict() == anchor.info.features.to_dict()
    assert ds.description == anchor.description == ""
    assert dagster_ds.NamedSplit("test") == "test" == str(datasets.NamedSplit("test"))
    form = {"description": "x", "license": "mit"}
    info = dagster_ds.DatasetInfo.from_dict({**form, "features": ds.features.to_dict()})
    assert info.license == "mit"
    assert dagster_ds.DatasetInfo.from_dict(info.to_dict()) == info
    assert Dataset.from_dict(DATA, info=info).features == ds.features
