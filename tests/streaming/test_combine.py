"""concatenate_datasets and interleave_datasets: schema checks, both dataset kinds."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from dagster_ds import Dataset, IterableDataset, concatenate_datasets, interleave_datasets
from dagster_ds.errors import (
    DuplicateColumnError,
    IncompatibleFeaturesError,
    InvalidArgumentError,
    RowCountMismatchError,
    SchemaMismatchError,
)

from .conftest import numbers


def test_mismatched_types_are_listed_column_by_column() -> None:
    a = IterableDataset.from_dict({"x": [1], "y": ["a"], "z": [1.0]})
    b = IterableDataset.from_dict({"x": ["1"], "y": ["b"], "z": [True]})
    for combine in (concatenate_datasets, interleave_datasets):
        with pytest.raises(IncompatibleFeaturesError) as caught:
            combine([a, b])
        message = str(caught.value)
        assert "'x' is int64 in dataset 0, string in dataset 1" in message
        assert "'z' is double in dataset 0, bool in dataset 1" in message
        assert "'y'" not in message
        assert isinstance(caught.value, SchemaMismatchError)


def test_schema_of_a_mapped_dataset_is_read_from_its_first_batch() -> None:
    a = numbers(3).map(lambda x: {"a": str(x["a"])})
    with pytest.raises(IncompatibleFeaturesError, match="'a' is string in dataset 0, int64"):
        concatenate_datasets([a, numbers(3)])


def test_concatenate_fills_missing_columns_with_none_and_sums_shards() -> None:
    a = IterableDataset.from_dict({"x": [1, 2], "y": ["a", "b"]}, num_shards=2)
    b = IterableDataset.from_dict({"x": [3], "z": [True]})
    both = concatenate_datasets([a, b])
    assert both.num_shards == 3
    assert both.column_names == ["x", "y", "z"]
    assert list(both) == [
        {"x": 1, "y": "a", "z": None},
        {"x": 2, "y": "b", "z": None},
        {"x": 3, "y": None, "z": True},
    ]
    assert [row["x"] for row in both.shard(3, 2)] == [3]
    shuffled = [row["x"] for row in both.shuffle(seed=4, buffer_size=1)]
    assert sorted(shuffled) == [1, 2, 3]


def test_side_by_side_needs_distinct_columns_and_equal_lengths() -> None:
    with pytest.raises(DuplicateColumnError, match=r"\['a'\]"):
        concatenate_datasets([numbers(3), numbers(3).remove_columns("b")], axis=1)
    short = IterableDataset.from_dict({"c": [1, 2]})
    joined = concatenate_datasets([numbers(3), short], axis=1)
    with pytest.raises(RowCountMismatchError, match=r"dataset\(s\) \[1\] ran out"):
        list(joined)
    assert joined.num_shards == 1
    assert list(joined.shard(2, 1)) == []


def test_interleave_with_probabilities_is_seeded() -> None:
    a, b = numbers(300), numbers(300).map(lambda x: {"a": x["a"] + 1000})
    mixed = interleave_datasets([a, b], probabilities=[0.8, 0.2], seed=5)
    values = [row["a"] for row in mixed]
    assert values == [row["a"] for row in interleave_datasets([a, b], [0.8, 0.2], seed=5)]
    share = sum(v >= 1000 for v in values) / len(values)
    assert 0.1 < share < 0.3
    assert values[-1] == 299 or values[-1] == 1299  # first_exhausted stops at a last row


def test_interleave_without_replacement_yields_every_row_once() -> None:
    a, b = numbers(50), numbers(20).map(lambda x: {"a": x["a"] + 1000})
    mixed = interleave_datasets(
        [a, b],
        probabilities=[0.5, 0.5],
        seed=1,
        stopping_strategy="all_exhausted_without_replacement",
    )
    values = [row["a"] for row in mixed]
    assert sorted(values) == list(range(50)) + list(range(1000, 1020))


def test_interleave_all_exhausted_oversamples_the_short_one() -> None:
    mixed = interleave_datasets([numbers(2), numbers(5)], stopping_strategy="all_exhausted")
    assert [row["a"] for row in mixed] == [0, 0, 1, 1, 0, 2, 1, 3, 0, 4]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: interleave_datasets([]), "empty list"),
        (lambda: concatenate_datasets([numbers(1), Dataset.from_dict({"a": [1]})]), "position 1"),  # pyright: ignore[reportArgumentType]
        (lambda: interleave_datasets([numbers(1)], stopping_strategy="never"), "never"),
        (lambda: interleave_datasets([numbers(1), numbers(1)], probabilities=[1.0]), "one"),
        (lambda: concatenate_datasets([numbers(1)], axis=2), "axis"),
        (lambda: concatenate_datasets([{"train": numbers(1)}]), "dict of splits"),  # type: ignore[list-item]
    ],
)
def test_bad_combinations_are_refused(call: Any, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        call()


# -- map-style datasets, against the anchor --------------------------------------------


def _map_style(module: Any) -> list[Any]:
    return [
        module.Dataset.from_dict({"x": list(range(5)), "y": [str(i) for i in range(5)]}),
        module.Dataset.from_dict({"x": list(range(10, 13)), "y": ["a", "b", "c"]}),
        module.Dataset.from_dict({"x": list(range(20, 27)), "y": list("abcdefg")}),
    ]


@pytest.mark.parametrize(
    "strategy", ["first_exhausted", "all_exhausted", "all_exhausted_without_replacement"]
)
def test_map_style_interleave_matches_the_anchor(anchor: ModuleType, strategy: str) -> None:
    import dagster_ds

    ours = interleave_datasets(_map_style(dagster_ds), stopping_strategy=strategy)
    theirs = anchor.interleave_datasets(_map_style(anchor), stopping_strategy=strategy)
    assert isinstance(ours, Dataset)
    assert ours.to_list() == theirs.to_list()


def test_map_style_concatenate_matches_the_anchor(anchor: ModuleType) -> None:
    import dagster_ds

    ours = concatenate_datasets(_map_style(dagster_ds), split="train")
    theirs = anchor.concatenate_datasets(_map_style(anchor))
    assert ours.to_list() == theirs.to_list()
    assert ours.split == "train"
    left = dagster_ds.Dataset.from_dict({"x": [1, 2]}).select([1, 0])
    right = dagster_ds.Dataset.from_dict({"z": ["p", "q"]})
    side = concatenate_datasets([left, right], axis=1)
    assert side.to_list() == [{"x": 2, "z": "p"}, {"x": 1, "z": "q"}]
    with pytest.raises(RowCountMismatchError):
        concatenate_datasets([left, dagster_ds.Dataset.from_dict({"z": [1]})], axis=1)


def test_map_style_interleave_with_probabilities_is_seeded() -> None:
    import dagster_ds

    datasets = _map_style(dagster_ds)
    first = interleave_datasets(datasets, probabilities=[0.2, 0.3, 0.5], seed=3)
    again = interleave_datasets(datasets, probabilities=[0.2, 0.3, 0.5], seed=3)
    assert first.to_list() == again.to_list()
    every = interleave_datasets(
        datasets, [0.2, 0.3, 0.5], seed=3, stopping_strategy="all_exhausted_without_replacement"
    )
    assert sorted(row["x"] for row in every.to_list()) == sorted(
        row["x"] for d in datasets for row in d.to_list()
    )
