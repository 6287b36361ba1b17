"""IterableDataset.batch(by_column=) and to_pandas(batch_size=, batched=), against `datasets`."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds import Dataset, IterableDataset

DATA: dict[str, list[Any]] = {"k": [1, 1, 2, 2, 2, 1, 0, 0, 3], "j": list("aabbbaacc")}


@pytest.mark.parametrize("by", ["k", ["k", "j"]])
@pytest.mark.parametrize("shards", [1, 3])
def test_batch_by_column(datasets: ModuleType, by: Any, shards: int) -> None:
    ours = Dataset.from_dict(DATA).to_iterable_dataset(num_shards=shards).batch(by_column=by)
    anchor = datasets.Dataset.from_dict(DATA).to_iterable_dataset(num_shards=shards)
    assert list(ours) == list(anchor.batch(by_column=by))
    assert ours.features is not None
    assert list(ours.features) == ["k", "j"]


def test_batch_by_column_treats_nulls_as_one_value() -> None:
    # The anchor groups a run of nulls with the rows around it; ours: nulls are one key.
    ds = IterableDataset.from_dict({"k": [1, None, None, 1]})
    assert list(ds.batch(by_column="k")) == [{"k": [1]}, {"k": [None, None]}, {"k": [1]}]


@settings(max_examples=30, deadline=None)
@given(keys=st.lists(st.integers(0, 2), min_size=2, max_size=30), stop=st.integers(0, 30))
def test_batch_by_column_resumes_exactly(keys: list[int], stop: int) -> None:
    ds = Dataset.from_dict({"k": keys, "i": list(range(len(keys)))})
    stream = ds.to_iterable_dataset(num_shards=2).batch(by_column="k")
    expected = list(stream)
    iterator = iter(stream)
    seen = [example for _, example in zip(range(stop), iterator, strict=False)]
    state = stream.state_dict()
    stream.load_state_dict(state)
    assert seen + list(stream) == expected


def test_batch_needs_a_size_or_columns() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        IterableDataset.from_dict(DATA).batch()
    with pytest.raises(KeyError, match="nope"):
        IterableDataset.from_dict(DATA).batch(by_column="nope")


def test_to_pandas_in_batches(datasets: ModuleType) -> None:
    ours = IterableDataset.from_dict(DATA).to_pandas(batch_size=4, batched=True)
    anchor = (
        datasets.Dataset.from_dict(DATA).to_iterable_dataset().to_pandas(batch_size=4, batched=True)
    )
    assert [frame.to_dict("list") for frame in ours] == [f.to_dict("list") for f in anchor]
