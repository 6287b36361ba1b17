"""Constructing, reading and formatting a Dataset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dagster_ds import ColumnNotFoundError, Dataset
from dagster_ds.features import ClassLabel, Features, Value


@pytest.fixture
def ds() -> Dataset:
    return Dataset.from_dict({"id": [0, 1, 2, 3], "text": ["a", "bb", "ccc", "dddd"]})


def test_constructors_agree_on_content_and_fingerprint() -> None:
    rows = [{"id": 0, "text": "a"}, {"id": 1, "text": "bb"}]
    from_dict = Dataset.from_dict({"id": [0, 1], "text": ["a", "bb"]})
    from_list = Dataset.from_list(rows)
    from_pandas = Dataset.from_pandas(pd.DataFrame(rows))
    from_table = Dataset(pa.table({"id": [0, 1], "text": ["a", "bb"]}))
    for other in (from_list, from_pandas, from_table):
        assert other.to_list() == rows
    assert from_list.fingerprint == from_table.fingerprint == from_dict.fingerprint
    # pandas 3 stores strings as large_string: another type, so another fingerprint.
    assert from_pandas.features["text"] in (Value("string"), Value("large_string"))


def test_from_generator_is_cached_by_generator_and_kwargs(tmp_path) -> None:
    calls = tmp_path / "calls"

    def rows(n: int):
        with calls.open("a") as log:
            log.write("x")
        yield from ({"i": i, "square": i * i} for i in range(n))

    first = Dataset.from_generator(rows, gen_kwargs={"n": 3})
    again = Dataset.from_generator(rows, gen_kwargs={"n": 3})
    other = Dataset.from_generator(rows, gen_kwargs={"n": 4})
    assert first["square"][:] == [0, 1, 4]
    assert again.fingerprint == first.fingerprint
    assert other.fingerprint != first.fingerprint
    assert calls.read_text() == "xx"


def test_properties(ds: Dataset) -> None:
    assert ds.num_rows == len(ds) == 4
    assert ds.column_names == ["id", "text"]
    assert ds.shape == (4, 2)
    assert ds.features == Features({"id": Value("int64"), "text": Value("string")})
    assert ds._fingerprint == ds.fingerprint
    assert "num_rows: 4" in repr(ds)


def test_getitem(ds: Dataset) -> None:
    assert ds[1] == {"id": 1, "text": "bb"}
    assert ds[-1] == {"id": 3, "text": "dddd"}
    assert ds[1:3] == {"id": [1, 2], "text": ["bb", "ccc"]}
    assert ds[::2] == {"id": [0, 2], "text": ["a", "ccc"]}
    assert ds[[3, 0]] == {"id": [3, 0], "text": ["dddd", "a"]}
    column = ds["text"]
    assert column == ["a", "bb", "ccc", "dddd"]
    assert column[1] == "bb"
    assert len(column) == 4


def test_bad_access_names_what_is_wrong(ds: Dataset) -> None:
    with pytest.raises(IndexError, match="Index 4 is out of range for a dataset of 4 rows"):
        ds[4]
    with pytest.raises(
        ColumnNotFoundError, match=r"\['txt'\] not in the dataset; its columns are \['id', 'text'\]"
    ):
        ds["txt"]
    with pytest.raises(KeyError):
        ds["txt"]


def test_iteration(ds: Dataset) -> None:
    assert list(ds) == ds.to_list()
    assert [batch["id"] for batch in ds.iter(batch_size=3)] == [[0, 1, 2], [3]]
    assert [batch["id"] for batch in ds.iter(batch_size=3, drop_last_batch=True)] == [[0, 1, 2]]


def test_formats(ds: Dataset) -> None:
    numpy = ds.with_format("numpy")
    assert isinstance(numpy["id"][:], np.ndarray)
    assert isinstance(numpy[0]["id"], np.integer)
    arrow = ds.with_format("arrow")
    assert isinstance(arrow[0:2], pa.Table)
    assert arrow[0:2].num_rows == 2
    pandas = ds.with_format("pandas")
    assert isinstance(pandas[0:2], pd.DataFrame)
    only_id = ds.with_format("numpy", columns=["id"])
    assert list(only_id[0]) == ["id"]
    everything = ds.with_format("numpy", columns=["id"], output_all_columns=True)
    assert everything[0]["text"] == "a"
    assert ds.with_format("arrow").fingerprint != ds.fingerprint
    assert ds.format["type"] is None
    ds.set_format("numpy")
    assert ds.format["type"] == "numpy"
    ds.reset_format()
    assert ds[0] == {"id": 0, "text": "a"}


def test_features_are_kept_and_class_labels_encoded() -> None:
    features = Features({"label": ClassLabel(names=["neg", "pos"]), "text": Value("string")})
    ds = Dataset.from_dict({"label": [0, 1], "text": ["bad", "good"]}, features=features)
    mapped = ds.map(lambda x: {"text": x["text"].upper()})
    assert mapped.features == features
    label = mapped.features["label"]
    assert isinstance(label, ClassLabel)
    assert label.int2str(1) == "pos"
