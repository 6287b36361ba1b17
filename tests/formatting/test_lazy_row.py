"""Per-example lazy rows: a batch's rows never reach the collector's older generations."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from dagster_ds import Dataset
from dagster_ds.formatting._lazy_row import collection_paused

ROWS = 60_000


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """How many collections of each generation (0, 1, 2) start while the test runs."""
    counts = [0, 0, 0]

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            counts[info["generation"]] += 1

    gc.collect()
    gc.callbacks.append(count)
    try:
        yield counts
    finally:
        gc.callbacks.remove(count)


def narrow() -> Dataset:
    return Dataset.from_dict(
        {"a": list(range(ROWS)), "b": [i / 2 for i in range(ROWS)], "c": ["x"] * ROWS}
    )


def test_a_per_example_map_over_lazy_rows_makes_no_older_generation_collection(
    collections: list[int],
) -> None:
    dataset = narrow()
    collections[:] = [0, 0, 0]
    mapped = dataset.map(lambda row: {"s": row["a"] + row["b"]}, load_from_cache_file=False)
    assert collections[1:] == [0, 0]
    assert mapped[ROWS - 1]["s"] == (ROWS - 1) * 1.5
    assert gc.isenabled()


def test_a_per_example_filter_over_lazy_rows_makes_no_older_generation_collection(
    collections: list[int],
) -> None:
    dataset = narrow()
    collections[:] = [0, 0, 0]
    kept = dataset.filter(lambda row: row["a"] % 3 == 0, load_from_cache_file=False)
    assert collections[1:] == [0, 0]
    assert len(kept) == ROWS // 3
    assert gc.isenabled()


def test_the_collector_runs_again_after_a_function_that_raises() -> None:
    def failing(row: dict[str, Any]) -> dict[str, Any]:
        raise ValueError(f"no row {row['a']}")

    with pytest.raises(ValueError, match="no row 0"):
        narrow().map(failing, load_from_cache_file=False)
    assert gc.isenabled()


def test_a_collector_paused_by_the_caller_stays_paused() -> None:
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
