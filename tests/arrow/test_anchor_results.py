"""Silent wrong results the anchor does not give: each checked against `datasets` itself."""

from __future__ import annotations

import glob
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dagster_ds
from dagster_ds import ClassLabel, Dataset, List
from dagster_ds.features import features_from_schema_metadata


@pytest.fixture
def datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    return datasets


COLUMNS: dict[str, list[Any]] = {"a": [1, 2, 3], "s": ["x", "y", "z"]}


@pytest.mark.parametrize("kind", ["parquet", "csv", "json"])
def test_exports_into_a_binary_file_object_write_the_rows(
    datasets: ModuleType, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file object taken for a path would land in the working folder, named after its
    # repr ("<_io.BufferedWriter name='..."): work in tmp_path to see it (and not litter).
    monkeypatch.chdir(tmp_path)
    ours, anchor = tmp_path / f"ours.{kind}", tmp_path / f"anchor.{kind}"
    with ours.open("wb") as file:
        written = getattr(Dataset.from_dict(COLUMNS), f"to_{kind}")(file)
    with anchor.open("wb") as file:
        expected = getattr(datasets.Dataset.from_dict(COLUMNS), f"to_{kind}")(file)
    assert written == ours.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == sorted(
        [ours.name, anchor.name]
    )
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith("<")]  # nothing under a repr
    loader = "parquet" if kind == "parquet" else kind
    back = datasets.load_dataset(loader, data_files=str(ours), split="train")
    assert back.to_dict() == COLUMNS
    if kind != "parquet":
        assert written == expected
        assert ours.read_bytes() == anchor.read_bytes()


def test_export_refuses_a_text_mode_file(tmp_path: Path) -> None:
    with (
        (tmp_path / "a.csv").open("w") as file,
        pytest.raises(dagster_ds.InvalidArgumentError, match="binary mode"),
    ):
        Dataset.from_dict(COLUMNS).to_csv(file)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("kind", ["csv", "json"])
def test_csv_and_json_exports_return_the_bytes_written_as_the_anchor(
    datasets: ModuleType, tmp_path: Path, kind: str
) -> None:
    ours = getattr(Dataset.from_dict(COLUMNS), f"to_{kind}")(str(tmp_path / f"o.{kind}"))
    anchor = getattr(datasets.Dataset.from_dict(COLUMNS), f"to_{kind}")(str(tmp_path / f"a.{kind}"))
    streamed = getattr(dagster_ds.IterableDataset.from_dict(COLUMNS), f"to_{kind}")(
        str(tmp_path / f"i.{kind}")
    )
    assert ours == anchor == streamed == (tmp_path / f"o.{kind}").stat().st_size


def test_streaming_export_into_a_file_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.parquet"
    with path.open("wb") as file:
        written = dagster_ds.IterableDataset.from_dict(COLUMNS).to_parquet(file)
    assert written == path.stat().st_size
    assert pq.read_table(path).to_pydict() == COLUMNS
    assert [p.name for p in tmp_path.rglob("*")] == ["s.parquet"]


def _label_features(module: ModuleType) -> Any:
    label = module.ClassLabel(names=["neg", "pos"])
    return module.Features(
        {"label": label, "labels": module.List(label), "n": module.Value("int64")}
    )


def test_map_keeps_a_class_label_the_function_returns(datasets: ModuleType) -> None:
    data = {"label": [0, 1], "labels": [[0, 1], [1]], "n": [1, 2]}

    def same(example: dict[str, Any]) -> dict[str, Any]:
        return {"label": example["label"], "labels": example["labels"], "n": example["n"] * 1.5}

    ours = Dataset.from_dict(data, features=_label_features(dagster_ds)).map(same)
    anchor = datasets.Dataset.from_dict(data, features=_label_features(datasets)).map(same)
    assert ours.features.to_dict() == anchor.features.to_dict()
    assert ours.features["labels"] == List(ClassLabel(names=["neg", "pos"]))


@pytest.mark.parametrize("batched", [False, True])
def test_map_drops_removed_columns_when_the_function_returns_its_changed_input(
    datasets: ModuleType, batched: bool
) -> None:
    def write_into_input(example: dict[str, Any]) -> dict[str, Any]:
        example["b"] = example["a"]
        return example

    ours = Dataset.from_dict(COLUMNS).map(write_into_input, batched=batched, remove_columns=["s"])
    anchor = datasets.Dataset.from_dict(COLUMNS).map(
        write_into_input, batched=batched, remove_columns=["s"]
    )
    streamed = dagster_ds.IterableDataset.from_dict(COLUMNS).map(
        write_into_input, batched=batched, remove_columns=["s"]
    )
    assert ours.column_names == anchor.column_names == ["a", "b"]
    assert ours.to_dict() == anchor.to_dict() == streamed.to_dict()


def test_encode_batch_encodes_class_labels_nested_in_lists_after_empty_ones(
    datasets: ModuleType,
) -> None:
    batch = {"n": [[[], ["a", "b"]], [None, ["b"]], []]}

    def features(module: ModuleType) -> Any:
        return module.Features({"n": module.List(module.List(module.ClassLabel(names=["a", "b"])))})

    assert features(dagster_ds).encode_batch(batch) == features(datasets).encode_batch(batch)
    assert features(dagster_ds).encode_batch(batch) == {"n": [[[], [0, 1]], [None, [1]], []]}


@pytest.mark.parametrize("kind", ["arrow", "numpy", "pandas"])
def test_map_keeps_the_format(datasets: ModuleType, kind: str) -> None:
    def same(batch: Any) -> Any:
        return batch

    ours = Dataset.from_dict(COLUMNS).with_format(kind).map(same, batched=True)
    anchor = datasets.Dataset.from_dict(COLUMNS).with_format(kind).map(same, batched=True)
    assert ours.format["type"] == anchor.format["type"] == kind
    assert type(ours[:1]) is type(anchor[:1])
    assert (
        ours.fingerprint
        == Dataset.from_dict(COLUMNS).with_format(kind).map(same, batched=True).fingerprint
    )


def test_format_columns_follow_the_columns_a_transform_keeps(datasets: ModuleType) -> None:
    ours = Dataset.from_dict(COLUMNS).with_format("numpy", columns=["a", "s"])
    anchor = datasets.Dataset.from_dict(COLUMNS).with_format("numpy", columns=["a", "s"])
    ours_out = ours.map(lambda x: x, remove_columns=["s"])
    anchor_out = anchor.map(lambda x: x, remove_columns=["s"])
    # The anchor still lists the removed column; we forget it (it cannot be formatted).
    assert ours_out.format["columns"] == ["a"]
    assert ours_out.format["type"] == anchor_out.format["type"] == "numpy"
    assert ours_out[0]["a"] == anchor_out[0]["a"]


def test_pandas_and_arrow_columns_are_a_series_and_a_chunked_array(datasets: ModuleType) -> None:
    for kind, expected in [("pandas", pd.Series), ("arrow", pa.ChunkedArray)]:
        ours = Dataset.from_dict(COLUMNS).with_format(kind)["s"]
        anchor = datasets.Dataset.from_dict(COLUMNS).with_format(kind)["s"]
        assert isinstance(ours, expected)
        assert isinstance(anchor, expected)
        values = ours.to_list() if kind == "pandas" else ours.to_pylist()
        expected_values = anchor.to_list() if kind == "pandas" else anchor.to_pylist()
        assert values == expected_values == COLUMNS["s"]


def test_numpy_format_gives_numpy_strings(datasets: ModuleType) -> None:
    ours = Dataset.from_dict(COLUMNS).with_format("numpy")
    anchor = datasets.Dataset.from_dict(COLUMNS).with_format("numpy")
    assert type(ours[0]["s"]) is type(anchor[0]["s"]) is np.str_
    assert type(ours["s"][0]) is type(anchor["s"][0]) is np.str_
    assert ours[:2]["s"].dtype.kind == anchor[:2]["s"].dtype.kind == "U"


def test_tables_carry_their_features_in_the_schema_metadata(
    datasets: ModuleType, tmp_path: Path
) -> None:
    data = {"label": [0, 1], "labels": [[0], [1]], "n": [1, 2]}
    ours = Dataset.from_dict(data, features=_label_features(dagster_ds)).map(lambda x: {"k": 1})
    anchor = datasets.Dataset.from_dict(data, features=_label_features(datasets)).map(
        lambda x: {"k": 1}
    )
    assert features_from_schema_metadata(ours.data.schema.metadata) == ours.features
    assert (
        datasets.Features.from_arrow_schema(ours.data.schema).to_dict() == anchor.features.to_dict()
    )
    csv = tmp_path / "a.csv"
    csv.write_text("a,b\n1,x\n")
    loaded = dagster_ds.load_dataset("csv", data_files=str(csv), split="train")
    assert features_from_schema_metadata(loaded.data.schema.metadata) == (loaded.features)
    ours.save_to_disk(str(tmp_path / "saved"))
    [arrow_file] = glob.glob(str(tmp_path / "saved" / "*.arrow"))
    assert datasets.Dataset.from_file(arrow_file).features.to_dict() == anchor.features.to_dict()
