"""Per-example lazy rows: a batch's rows never reach the collector's older generations."""

from __future__ import annotations

import gc
import pickle
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_per_example_map_s_rows_start_almost_no_young_collection(
    collections: list[int],
) -> None:
    # A batch's rows are made and freed below the held young threshold: no collection
    # walks them (the 700-allocation threshold made one every 700 rows).
    dataset = narrow()
    collections[:] = [0, 0, 0]
    dataset.map(lambda row: {"s": row["a"]}, load_from_cache_file=False)
    dataset.filter(lambda row: row["a"] % 3 == 0, load_from_cache_file=False)
    assert collections[0] < 10
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


_KEYS = st.sampled_from(["a", "b", "c", "z"])
_EDITS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["get", "getitem", "pop", "setdefault", "del", "in"]), _KEYS),
        st.tuples(st.just("set"), _KEYS, st.integers(-3, 3)),
        st.tuples(st.just("update"), st.dictionaries(_KEYS, st.integers(-3, 3), max_size=2)),
        st.tuples(st.sampled_from(["clear", "copy", "len", "keys", "pickle"])),
    ),
    max_size=8,
)


def _edit(row: Any, eager: dict[str, Any], edit: tuple[Any, ...]) -> tuple[set[str], set[str]]:
    """Apply ``edit`` to both; the keys whose values it read, and those it replaced."""
    kind, *rest = edit
    key: Any = rest[0] if rest else None
    value: Any = rest[-1] if rest else None
    if kind in ("get", "getitem", "pop", "setdefault"):
        method = "__getitem__" if kind == "getitem" else kind
        args = (key, 9) if kind == "setdefault" else (key,)
        if kind != "get" and kind != "setdefault" and key not in eager:
            with pytest.raises(KeyError):
                getattr(row, method)(*args)
        else:
            assert getattr(row, method)(*args) == getattr(eager, method)(*args)
        return {key}, {key} if kind == "pop" else set()
    if kind == "del" and key in eager:
        del row[key], eager[key]
        return set(), {key}
    if kind == "in":
        assert (key in row) == (key in eager)
    elif kind == "set":
        row[key] = eager[key] = value
        return set(), {key}
    elif kind == "update":
        row.update(key)
        eager.update(key)
        return set(), set(key)
    elif kind == "clear":
        row.clear()
        eager.clear()
        return set(), {"a", "b", "c"}
    elif kind == "len":
        assert len(row) == len(eager)
    elif kind == "keys":
        assert list(row.keys()) == list(eager)
    elif kind == "pickle":
        assert pickle.loads(pickle.dumps(row)) == eager
        return set(eager), set()
    return set(), set()


@settings(max_examples=300, deadline=None)
@given(_EDITS)
def test_random_edits_to_a_lazy_row_behave_as_on_the_eager_dict_and_record_the_values_read(
    edits: list[tuple[Any, ...]],
) -> None:
    table = pa.table({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 1.5]})
    rows = lazy_rows(table)
    row, eager = rows[1], table.to_pylist()[1]
    unread, reads = {"a", "b", "c"}, set[str]()  # keys still holding their input value
    for edit in edits:
        if edit[0] == "copy":  # a copy, changed apart, then one of it goes on
            twin = row.copy()
            twin["new"] = 0
            row = twin.copy()
            del row["new"]
            continue
        read, replaced = _edit(row, eager, edit)
        reads |= read & unread
        unread -= replaced
        assert read_columns(rows) == reads
    reads |= unread
    assert (dict(row), list(row)) == (eager, list(eager))
    assert read_columns(rows) == reads
