"""Per-example lazy rows: a batch's rows never reach the collector's older generations."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from dagster_ds import Dataset
from dagster_ds.formatting._lazy_row import collection_paused, lazy_rows, read_columns

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
