"""Crashes and error types: where the anchor raises a builtin, ours is an instance of it."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import dagster_ds
from dagster_ds import ClassLabel, Dataset, DatasetDict, Features, Hasher, TransformOutputError
from dagster_ds.features import Json


@pytest.fixture
def datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    return datasets


@pytest.mark.parametrize(
    "call",
    [
        lambda module: module.Dataset.from_dict({"a": [1]}).rename_columns({"b": "c"}),
        lambda module: module.Dataset.from_dict({"a": [1]}).rename_column("b", "c"),
        lambda module: module.Dataset.from_dict({"a": [1]}).remove_columns(["b"]),
        lambda module: module.Dataset.from_dict({"a": [1]}).select_columns(["b"]),
        lambda module: module.Dataset.from_dict({"a": [1]})["b"],
    ],
)
def test_a_missing_column_is_a_value_error_as_in_the_anchor(
    datasets: ModuleType, call: Any
) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (the type is the claim)
        call(datasets)
    with pytest.raises(ValueError, match="'b'"):
        call(dagster_ds)
    with pytest.raises(KeyError):
        call(dagster_ds)


def test_a_dataset_dict_holding_none_is_a_type_error(datasets: ModuleType) -> None:
    with pytest.raises(TypeError):
        datasets.DatasetDict({"train": None}).map(lambda x: x)
    with pytest.raises(TypeError, match="'train' is a NoneType"):
        DatasetDict({"train": None}).map(lambda x: x)  # pyright: ignore[reportCallIssue, reportArgumentType]


def test_class_label_names_as_a_numpy_array_is_a_type_error(datasets: ModuleType) -> None:
    with pytest.raises(TypeError):
        datasets.ClassLabel(names=np.array(["a", "b"]))
    with pytest.raises(TypeError, match="list"):
        ClassLabel(names=np.array(["a", "b"]))  # pyright: ignore[reportArgumentType]
    assert ClassLabel(names=("a", "b")).names == ["a", "b"]


class _Unpicklable:
    def __reduce__(self) -> Any:
        raise TypeError("not today")


def test_an_unpicklable_object_is_a_pickling_error_and_a_type_error() -> None:
    with pytest.raises(pickle.PicklingError):
        Hasher.hash(_Unpicklable())
    with pytest.raises(TypeError):
        Hasher.hash(_Unpicklable())


def test_numpy_integers_index_rows(datasets: ModuleType) -> None:
    data = {"a": [1, 2, 3]}
    ours, anchor = Dataset.from_dict(data), datasets.Dataset.from_dict(data)
    assert ours[np.int64(1)] == anchor[np.int64(1)] == {"a": 2}
    assert ours["a"][np.int32(2)] == 3
    assert ours[np.array([0, 2])] == anchor[np.array([0, 2])] == {"a": [1, 3]}


def test_map_returning_torch_tensors_and_numpy_arrays(datasets: ModuleType) -> None:
    torch = pytest.importorskip("torch")
    data = {"a": [1, 2]}

    def tensors(example: dict[str, Any]) -> dict[str, Any]:
        return {"t": torch.tensor([example["a"], 0]), "m": np.eye(2) * example["a"]}

    ours = Dataset.from_dict(data).map(tensors)
    anchor = datasets.Dataset.from_dict(data).map(tensors)
    assert ours.to_dict() == anchor.to_dict()
    batched = Dataset.from_dict(data).map(
        lambda batch: {"t": torch.tensor(batch["a"]) * 2}, batched=True
    )
    assert batched["t"][:] == [2, 4]
    streamed = dagster_ds.IterableDataset.from_dict(data).map(tensors)
    assert streamed.to_dict() == anchor.to_dict()


def test_a_batched_map_that_changes_a_column_type_names_the_rows() -> None:
    def int_then_str(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        value: Any = 1 if batch["a"][0] == 0 else "x"
        return {"b": [value] * len(batch["a"])}

    ds = Dataset.from_dict({"a": list(range(4))})
    with pytest.raises(TransformOutputError, match=r"examples 2 to 3.*'b'.*int64.*string"):
        ds.map(int_then_str, batched=True, batch_size=2)


def test_json_features_hold_dicts_and_lists_as_the_anchor(datasets: ModuleType) -> None:
    values = [{"a": 1}, [1, 2], None, 3]
    ours = Dataset.from_dict({"j": values}, features=Features({"j": Json()}))
    anchor = datasets.Dataset.from_dict(
        {"j": values}, features=datasets.Features({"j": datasets.Json()})
    )
    assert ours["j"][:] == anchor["j"][:] == values  # decoded on read, as the anchor
    assert ours.data.column("j").to_pylist() == ['{"a":1}', "[1,2]", None, "3"]
    cast = Dataset.from_dict({"j": [{"a": 1}, {"a": 2}]}).cast_column("j", Json())
    assert cast["j"][:] == [{"a": 1}, {"a": 2}]


# Importing torch._dynamo (what torch.compile needs) warns about torch's own deprecations.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_hashing_a_torch_compiled_function() -> None:
    torch = pytest.importorskip("torch")

    def f(x: Any) -> Any:
        return x + 1

    def g(x: Any) -> Any:
        return x + 2

    assert Hasher.hash(torch.compile(f)) == Hasher.hash(torch.compile(f))
    assert Hasher.hash(torch.compile(f)) != Hasher.hash(torch.compile(g))
    assert Hasher.hash(threading.Lock) == Hasher.hash(threading.Lock)
