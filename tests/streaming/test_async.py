"""Async functions in map and filter, streaming and map-style, as the anchor runs them.

The anchor is asked with the same functions, synchronous (its async path leaks an
event loop per call, which the warnings-as-errors run would report).
"""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import Any

import pytest

from dagster_ds import Dataset, IterableDataset

DATA = {"a": list(range(7))}


async def is_even(example: dict[str, Any]) -> bool:
    await asyncio.sleep(0)
    return example["a"] % 2 == 0


async def evens(batch: dict[str, list[Any]]) -> list[bool]:
    await asyncio.sleep(0)
    return [value % 2 == 0 for value in batch["a"]]


async def times_ten(example: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"b": example["a"] * 10}


async def batch_times_ten(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    await asyncio.sleep(0)
    return {"b": [value * 10 for value in batch["a"]]}


def synchronous(function: Any) -> Any:
    def call(*args: Any) -> Any:
        return asyncio.run(function(*args))

    return call


@pytest.mark.parametrize(("function", "batched"), [(is_even, False), (evens, True)])
def test_async_filter_keeps_only_accepted_rows(
    datasets: ModuleType, function: Any, batched: bool
) -> None:
    anchor = datasets.Dataset.from_dict(DATA)
    expected = anchor.filter(synchronous(function), batched=batched).to_dict()
    assert expected == {"a": [0, 2, 4, 6]}
    assert IterableDataset.from_dict(DATA).filter(function, batched=batched).to_dict() == expected
    assert Dataset.from_dict(DATA).filter(function, batched=batched).to_dict() == expected


@pytest.mark.parametrize(("function", "batched"), [(times_ten, False), (batch_times_ten, True)])
def test_async_map(datasets: ModuleType, function: Any, batched: bool) -> None:
    anchor = datasets.Dataset.from_dict(DATA)
    expected = anchor.map(synchronous(function), batched=batched).to_dict()
    assert IterableDataset.from_dict(DATA).map(function, batched=batched).to_dict() == expected
    assert Dataset.from_dict(DATA).map(function, batched=batched).to_dict() == expected


def test_async_map_inside_a_running_event_loop() -> None:
    async def main() -> list[Any]:
        return IterableDataset.from_dict(DATA).map(times_ten).to_dict()["b"]

    assert asyncio.run(main()) == [value * 10 for value in DATA["a"]]
