"""Consecutive per-example map and filter convert each batch once: same rows as unfused."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_ds import IterableDataset


def _add(example: dict[str, Any]) -> dict[str, Any]:
    return {"n": len(example.get("s") or "")}


def _replace(example: dict[str, Any]) -> dict[str, Any]:
    return {"a": example["a"] * 2 + 1}


def _float(example: dict[str, Any]) -> dict[str, Any]:
    return {"a": example["a"] / 2 if example["a"] % 2 else example["a"]}


def _mutate(example: dict[str, Any]) -> dict[str, Any]:
    example["a"] = -1  # changes the function's own dict only: not the output
    example.pop("s", None)
    return {"m": 1}


def _returns_input(example: dict[str, Any]) -> dict[str, Any]:
    example["s"] = example.get("s", "") + "!"
    return example


def _nested(example: dict[str, Any]) -> dict[str, Any]:
    return {"l": [example["a"], 1]}


def _appends(example: dict[str, Any]) -> dict[str, Any]:
    if "l" in example:
        example["l"].append(99)  # a nested value of the function's own dict
    return {"k": 0}


def _none(example: dict[str, Any]) -> None:
    return None


def _keep(example: dict[str, Any]) -> bool:
    return example["a"] % 3 != 0


def _keep_and_mutate(example: dict[str, Any]) -> bool:
    example["a"] = 0
    return len(example) % 2 == 0 or example.get("n", 1) > 2


def _clear(example: dict[str, Any]) -> bool:
    example.clear()
    return True


def _keep_indices(example: dict[str, Any], index: int) -> bool:
    return index % 4 != 1


OPS = st.sampled_from(
    [
        ("map", _add, {}),
        ("map", _replace, {}),
        ("map", _float, {}),
        ("map", _mutate, {}),
        ("map", _returns_input, {"remove_columns": ["s"]}),
        ("map", _nested, {}),
        ("map", _appends, {}),
        ("map", _none, {}),
        ("map", _add, {"remove_columns": ["a"]}),
        ("filter", _keep, {}),
        ("filter", _keep_and_mutate, {}),
        ("filter", _keep_indices, {"with_indices": True}),
    ]
)


def _chain(ops: list[tuple[str, Any, dict[str, Any]]], rows: int, fused: bool) -> IterableDataset:
    dataset = IterableDataset.from_dict(
        {"a": list(range(rows)), "s": [f"t{i}" * (i % 3) for i in range(rows)]}, num_shards=2
    )
    for kind, function, kwargs in ops:
        names = dataset.column_names or list(next(iter(dataset), {"a": 0, "s": ""}))
        if "a" not in names or any(n not in names for n in kwargs.get("remove_columns", [])):
            break
        dataset = getattr(dataset, kind)(function, **kwargs)
        if not fused:  # a map without a function reads Arrow batches: it breaks the chain
            dataset = dataset.map(None)
    return dataset


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=5), st.integers(2, 2500))
def test_fused_operators_give_the_rows_of_unfused_ones(
    ops: list[tuple[str, Any, dict[str, Any]]], rows: int
) -> None:
    fused, unfused = _chain(ops, rows, fused=True), _chain(ops, rows, fused=False)
    expected = list(unfused)
    assert list(fused) == expected
    assert [list(row) for row in fused] == [list(row) for row in expected]  # column order
    assert list(fused.iter(batch_size=700)) == list(unfused.iter(batch_size=700))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=4), st.integers(2, 2500), st.data())
def test_resume_through_fused_operators_is_exact(
    ops: list[tuple[str, Any, dict[str, Any]]], rows: int, data: st.DataObject
) -> None:
    dataset = _chain(ops, rows, fused=True)
    full = list(dataset)
    stop = data.draw(st.integers(0, len(full)), label="checkpoint")
    iterator = iter(dataset)
    head = [next(iterator) for _ in range(stop)]
    state = json.loads(json.dumps(dataset.state_dict()))
    assert head == full[:stop]
    resumed = _chain(ops, rows, fused=True)
    resumed.load_state_dict(state)
    assert list(resumed) == full[stop:]


def test_a_function_changing_its_example_changes_nothing_downstream() -> None:
    dataset = IterableDataset.from_dict({"a": [1, 2, 3], "s": ["x", "y", "z"]})
    out = dataset.map(_mutate).filter(_clear).map(_add)
    assert list(out) == [
        {"a": 1, "s": "x", "m": 1, "n": 1},
        {"a": 2, "s": "y", "m": 1, "n": 1},
        {"a": 3, "s": "z", "m": 1, "n": 1},
    ]
