"""FunctionCall.batched: what batched map and filter functions get, map-style and streaming."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

from dagster_ds import Dataset
from dagster_ds.formatting import Formatter
from dagster_ds.formatting._calls import FunctionCall
from dagster_ds.formatting._lazy import LazyBatch

from ._json_maps import read_json, skip_json


def source() -> dict[str, list[Any]]:
    return {"a": [1, 2, 3, 4], "b": ["w", "x", "y", None], "c": [[1], [2, 3], [], [4]]}


def mutate_and_return(batch: Any) -> Any:
    batch["a"][0] = 100
    batch["c"][1].append(9)
    return batch


def delete_then_return(batch: Any) -> Any:
    del batch["a"]
    batch["n"] = [0] * len(batch["b"])
    return batch


def new_dict_of_batch_lists(batch: Any) -> Any:
    return {"a2": batch["a"], "b": [str(value) for value in batch["b"]]}


def views(batch: Any) -> Any:
    rows = len(batch["a"])
    return {"keys": [",".join(batch)] * rows, "len": [len(batch)] * rows, "r": [repr(batch)] * rows}


def reads_nothing(batch: Any) -> Any:
    return {"n": [4, 4, 4, 4][: len(next(iter(dict(batch).values())))]}


def returns_untouched(batch: Any) -> Any:
    return batch


FUNCTIONS = [
    mutate_and_return,
    delete_then_return,
    new_dict_of_batch_lists,
    views,
    reads_nothing,
    returns_untouched,
]


def test_the_default_format_gets_a_lazy_batch_and_input_columns_get_lists() -> None:
    table = pa.table(source())
    seen: list[Any] = []
    call = FunctionCall(lambda batch: seen.append(batch))
    formatted, _ = call.batched(table, 0)
    assert isinstance(formatted, LazyBatch)
    assert seen == [formatted]
    columns = FunctionCall(lambda a: seen.append(a), input_columns=("a",))
    formatted, _ = columns.batched(table, 0)
    assert type(formatted) is dict
    assert seen[-1] == [1, 2, 3, 4]
    numpy = FunctionCall(lambda batch: None, formatter=Formatter.create("numpy"))
    assert type(numpy.batched(table, 0)[0]) is dict


@pytest.mark.parametrize("remove_columns", [None, ["b"]])
@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda function: function.__name__)
def test_streaming_batched_map_gives_the_anchors_rows(
    anchor: ModuleType, function: Any, remove_columns: list[str] | None
) -> None:
    ours = Dataset.from_dict(source()).to_iterable_dataset(num_shards=2)
    theirs = anchor.Dataset.from_dict(source()).to_iterable_dataset(num_shards=2)
    out = ours.map(function, batched=True, batch_size=2, remove_columns=remove_columns)
    expected = theirs.map(function, batched=True, batch_size=2, remove_columns=remove_columns)
    assert list(out) == list(expected)


def test_streaming_batched_filter_gives_the_anchors_rows(anchor: ModuleType) -> None:
    def even(batch: Any) -> list[bool]:
        return [value % 2 == 0 for value in batch["a"]]

    def even_and_vandal(batch: Any) -> list[bool]:
        keep = even(batch)
        batch["a"][0] = 99
        del batch["b"]
        return keep

    ours = Dataset.from_dict(source()).to_iterable_dataset()
    theirs = anchor.Dataset.from_dict(source()).to_iterable_dataset()
    out = list(ours.filter(even, batched=True, batch_size=3))
    assert out == list(theirs.filter(even, batched=True, batch_size=3))
    assert out == [{"a": 2, "b": "x", "c": [2, 3]}, {"a": 4, "b": None, "c": [4]}]
    # What a predicate does to its batch never reaches the rows (the anchor's streaming
    # filter shows the 99 in the second row: its rows share the lists).
    assert list(ours.filter(even_and_vandal, batched=True, batch_size=3)) == out


def test_streaming_batched_map_decodes_json_when_read_and_keeps_unread_json() -> None:
    from dagster_ds.features import Features, Json, Value

    features = Features({"j": Json(), "k": Value("int64")})
    ds = Dataset.from_dict({"j": [{"x": 1}, [2]], "k": [1, 2]}, features=features)

    stream = ds.to_iterable_dataset()
    assert list(stream.map(read_json, batched=True)) == [
        {"j": {"x": 1}, "k": 1, "kind": "dict"},
        {"j": [2], "k": 2, "kind": "list"},
    ]
    assert list(stream.map(skip_json, batched=True)) == [
        {"j": {"x": 1}, "k": 2},
        {"j": [2], "k": 4},
    ]
