"""filter, select, shuffle, sort, splits and column transforms (against the anchor where cheap)."""

from __future__ import annotations

import datasets
import pyarrow as pa
import pytest

from dagster_ds import CastError, Dataset, DuplicateColumnError
from dagster_ds.features import Features, Value

DATA = {"n": [5, 3, 8, 1, 9, 2, 7], "s": ["e", "c", "h", "a", "i", "b", "g"]}


@pytest.fixture
def ds() -> Dataset:
    return Dataset.from_dict(DATA)


@pytest.fixture
def anchor(tmp_path, monkeypatch) -> datasets.Dataset:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    return datasets.Dataset.from_dict(DATA)


def test_filter_per_example_batched_and_with_indices(ds: Dataset, anchor: datasets.Dataset) -> None:
    assert (
        ds.filter(lambda x: x["n"] > 4).to_list() == anchor.filter(lambda x: x["n"] > 4).to_list()
    )
    batched = ds.filter(lambda b: [v % 2 == 0 for v in b["n"]], batched=True, batch_size=3)
    assert batched["n"][:] == [8, 2]
    assert ds.filter(lambda x, i: i % 3 == 0, with_indices=True)["n"][:] == [5, 1, 7]
    assert ds.filter(lambda s: s < "c", input_columns="s")["s"][:] == ["a", "b"]


def test_filter_is_an_indices_mapping_over_the_same_table(ds: Dataset) -> None:
    kept = ds.filter(lambda x: x["n"] > 4)
    assert kept.data is ds.data
    assert kept.flatten_indices().data is not ds.data
    assert kept.flatten_indices().to_list() == kept.to_list()


def test_select_and_chained_indices(ds: Dataset) -> None:
    assert ds.select([6, 0])["n"][:] == [7, 5]
    assert ds.select(range(2, 4))["n"][:] == [8, 1]
    assert ds.filter(lambda x: x["n"] > 2).select([1, 0])["n"][:] == [3, 5]
    with pytest.raises(IndexError, match=r"\[0, 7\)"):
        ds.select([7])


def test_shuffle_matches_the_anchor_order_for_a_seed(ds: Dataset, anchor: datasets.Dataset) -> None:
    assert ds.shuffle(seed=42)["n"][:] == anchor.shuffle(seed=42)["n"]
    assert ds.shuffle(seed=42).fingerprint == ds.shuffle(seed=42).fingerprint
    assert ds.shuffle(seed=1).fingerprint != ds.shuffle(seed=42).fingerprint
    assert ds.shuffle(seed=42).data is ds.data


# The anchor's own sort passes null_placement the way pyarrow 25 deprecates.
@pytest.mark.filterwarnings("ignore:Specifying null_placement in SortOptions:FutureWarning")
def test_sort(ds: Dataset, anchor: datasets.Dataset) -> None:
    assert ds.sort("n")["n"][:] == anchor.sort("n")["n"]
    assert ds.sort("s", reverse=True)["s"][:] == anchor.sort("s", reverse=True)["s"]


@pytest.mark.parametrize(
    ("kwargs"),
    [
        {"test_size": 0.3, "seed": 3},
        {"test_size": 2, "seed": 0},
        {"train_size": 0.5, "shuffle": False},
    ],
)
def test_train_test_split_matches_the_anchor(
    ds: Dataset, anchor: datasets.Dataset, kwargs: dict
) -> None:
    ours, theirs = ds.train_test_split(**kwargs), anchor.train_test_split(**kwargs)
    for split in ("train", "test"):
        assert ours[split]["n"][:] == theirs[split]["n"]


def test_shard(ds: Dataset, anchor: datasets.Dataset) -> None:
    for index in range(3):
        assert ds.shard(3, index)["n"][:] == anchor.shard(3, index)["n"]
        assert (
            ds.shard(3, index, contiguous=False)["n"][:]
            == anchor.shard(3, index, contiguous=False)["n"]
        )


def test_column_transforms(ds: Dataset) -> None:
    assert ds.rename_column("n", "number").column_names == ["number", "s"]
    assert ds.rename_columns({"n": "x", "s": "y"}).column_names == ["x", "y"]
    assert ds.remove_columns("s").column_names == ["n"]
    assert ds.select_columns(["s", "n"]).column_names == ["s", "n"]
    added = ds.add_column("flag", [True] * 7)
    assert added[0] == {"n": 5, "s": "e", "flag": True}
    with pytest.raises(DuplicateColumnError, match="rename_columns"):
        ds.rename_columns({"n": "s"})
    fingerprints = {
        ds.fingerprint,
        ds.remove_columns("s").fingerprint,
        ds.rename_column("n", "m").fingerprint,
    }
    assert len(fingerprints) == 3


def test_cast_checks_values() -> None:
    flags = Dataset.from_dict({"f": [0, 1, 1]})
    assert flags.cast(Features({"f": Value("bool")}))["f"][:] == [False, True, True]
    bad = Dataset.from_dict({"f": [0, 1, 2]})
    with pytest.raises(CastError, match="'f'"):
        bad.cast(Features({"f": Value("bool")}))
    assert bad.cast_column("f", Value("string"))["f"][:] == ["0", "1", "2"]
    assert bad.cast_column("f", Value("int8")).data.schema.field("f").type == pa.int8()


def test_new_fingerprint_is_used_as_given_and_must_be_valid(ds: Dataset) -> None:
    from dagster_ds import InvalidFingerprintError

    fingerprint = "ab" * 16
    assert ds.map(lambda x: {"m": 1}, new_fingerprint=fingerprint).fingerprint == fingerprint
    with pytest.raises(InvalidFingerprintError, match="32 lowercase hexadecimal"):
        ds.map(lambda x: {"m": 1}, new_fingerprint="my-run")


def test_shuffle_with_a_generator_matches_the_anchor(ds: Dataset, anchor: datasets.Dataset) -> None:
    import numpy as np

    ours = ds.shuffle(generator=np.random.default_rng(7))["n"][:]
    assert ours == anchor.shuffle(generator=np.random.default_rng(7))["n"]
