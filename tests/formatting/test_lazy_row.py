"""Per-example lazy rows: a batch's rows never reach the collector's older generations."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from dagster_ds import Dataset
from dagster_ds.formatting._lazy_row import lazy_rows, older_generations_held, read_columns

ROWS = 60_000
THRESHOLDS = gc.get_threshold()


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
    assert gc.get_threshold() == THRESHOLDS


def test_a_per_example_filter_over_lazy_rows_makes_no_older_generation_collection(
    collections: list[int],
) -> None:
    dataset = narrow()
    collections[:] = [0, 0, 0]
    kept = dataset.filter(lambda row: row["a"] % 3 == 0, load_from_cache_file=False)
    assert collections[1:] == [0, 0]
    assert len(kept) == ROWS // 3
    assert gc.get_threshold() == THRESHOLDS


def test_the_collector_runs_again_after_a_function_that_raises() -> None:
    def failing(row: dict[str, Any]) -> dict[str, Any]:
        raise ValueError(f"no row {row['a']}")

    with pytest.raises(ValueError, match="no row 0"):
        narrow().map(failing, load_from_cache_file=False)
    assert gc.get_threshold() == THRESHOLDS


def test_nested_and_concurrent_holds_restore_the_thresholds_when_the_last_ends() -> None:
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        with older_generations_held():
            started.set()
            release.wait(timeout=60)

    other = threading.Thread(target=hold)
    with older_generations_held():
        other.start()
        started.wait(timeout=60)
        with older_generations_held():
            pass
    assert gc.get_threshold() != THRESHOLDS  # the other thread still holds them
    release.set()
    other.join()
    assert gc.get_threshold() == THRESHOLDS


def test_young_cyclic_garbage_is_still_collected_while_held(collections: list[int]) -> None:
    with older_generations_held():
        for _ in range(10_000):
            cycle: list[Any] = []
            cycle.append(cycle)
    assert collections[0] > 0
    assert collections[1:] == [0, 0]


def test_update_sets_columns_as_a_dict_does_and_reads_none() -> None:
    rows = lazy_rows(pa.table({"a": [1, 2], "b": ["x", "y"]}))
    row = rows[0]
    row.update({"a": 5}, c=1)
    row.update([("d", 2)])
    assert read_columns(rows) == frozenset()
    assert row == {"a": 5, "b": "x", "c": 1, "d": 2}
    other = lazy_rows(pa.table({"e": [3]}))
    rows[1].update(other[0])  # another lazy row's values are read
    assert read_columns(other) == {"e"}
    assert rows[1]["e"] == 3
