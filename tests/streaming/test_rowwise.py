"""Consecutive per-example map and filter convert each batch once: same rows as unfused."""

from __future__ import annotations

import collections
import gc
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagster_ds import Features, IterableDataset, Json, Value
from dagster_ds.streaming._rowwise import arrow_type


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


def _some_none(example: dict[str, Any]) -> dict[str, Any]:
    return {"v": None if example["a"] % 5 == 0 else example["a"]}


def _none_between_texts(example: dict[str, Any]) -> dict[str, Any]:
    return {"t": None if 700 <= example["a"] < 1900 else f"é{example['a']}"}  # a null batch


def _int_then_float(example: dict[str, Any]) -> dict[str, Any]:
    return {"v": 1 if example["a"] < 1000 else 1.5}  # the type changes between batches


def _two_new_keys(example: dict[str, Any]) -> dict[str, Any]:
    if example["a"] % 2:
        return {"x": example["a"] % 2 == 0, "y": b"b" * int(example["a"] % 3)}
    return {"y": b"", "x": True}  # the same keys in another order


def _retypes_input(example: dict[str, Any]) -> dict[str, Any]:
    return {"a": example["a"] + 0.25}  # an int column becomes float


def _new_dict_with_inputs(example: dict[str, Any]) -> dict[str, Any]:
    return {**example, "a": example["a"] + 3}


def _numpy_values(example: dict[str, Any]) -> dict[str, Any]:
    return {"v": np.int64(example["a"]), "f": np.float32(0.5)}  # Arrow converts them


def _large_ints(example: dict[str, Any]) -> dict[str, Any]:
    return {"v": 2**63 - 1 - int(example["a"]), "w": -(2**63) + int(example["a"])}


def _dict_subclass(example: dict[str, Any]) -> collections.OrderedDict[str, Any]:
    return collections.OrderedDict(c=example["a"] + 1)


def _times_three(a: int) -> dict[str, Any]:
    return {"c": a * 3}


def _keep_odd(a: int) -> bool:
    return a % 2 == 1


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
        ("map", _returns_input, {}),
        ("map", _nested, {}),
        ("map", _appends, {}),
        ("map", _none, {}),
        ("map", _add, {"remove_columns": ["a"]}),
        ("map", _some_none, {}),
        ("map", _none_between_texts, {}),
        ("map", _int_then_float, {}),
        ("map", _two_new_keys, {}),
        ("map", _retypes_input, {}),
        ("map", _new_dict_with_inputs, {}),
        ("map", _new_dict_with_inputs, {"remove_columns": ["s"]}),
        ("map", _numpy_values, {}),
        ("map", _large_ints, {}),
        ("map", _dict_subclass, {}),
        ("map", _times_three, {"input_columns": ["a"]}),
        ("filter", _keep_odd, {"input_columns": ["a"]}),
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
    got = list(fused)
    assert got == expected
    assert [list(row) for row in got] == [list(row) for row in expected]  # column order
    assert [_types(row) for row in got] == [_types(row) for row in expected]  # 1 != 1.0
    assert list(fused.iter(batch_size=700)) == list(unfused.iter(batch_size=700))
    _assert_same_arrow(fused, unfused)


def _assert_same_arrow(fused: IterableDataset, unfused: IterableDataset) -> None:
    """The Arrow batches built on demand are those the unfused operators build."""
    batches, unfused_batches = (list(d._record_batches()) for d in (fused, unfused))
    assert len(batches) == len(unfused_batches)
    for batch, expected_batch in zip(batches, unfused_batches, strict=True):
        assert batch.equals(expected_batch, check_metadata=True)
    # Per example in the arrow format: the last operator's batches are built too.
    tables, unfused_tables = (list(d.with_format("arrow")) for d in (fused, unfused))
    assert len(tables) == len(unfused_tables)
    for table, expected_table in zip(tables, unfused_tables, strict=True):
        assert table.equals(expected_table, check_metadata=True)


def _types(row: dict[str, Any]) -> list[type]:
    return [type(value) for value in row.values()]


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


def test_a_chain_of_per_example_operators_builds_no_arrow_data_for_its_functions() -> None:
    # Each function gets rows of the Python rows the operator before it handed on:
    # the Arrow batches between the operators are never built when iterated per example.
    rows = 20_000
    source = IterableDataset.from_dict({"a": list(range(rows)), "s": ["x"] * rows})
    chain = (
        source.map(lambda r: {"n": r["a"] + 1})
        .filter(lambda r: r["n"] % 3 != 0)
        .map(lambda r: {"m": r["n"] * 2})
    )
    pool = pa.default_memory_pool()
    before = pool.total_bytes_allocated()
    got = list(chain)
    allocated = pool.total_bytes_allocated() - before
    assert len(got) == rows - rows // 3
    assert got[1] == {"a": 1, "s": "x", "n": 2, "m": 4}
    assert allocated < rows  # building the chain's batches takes 8 bytes per int and row


def test_a_per_example_chain_makes_no_full_collection() -> None:
    # The lazy rows a function gets live while the collector holds its older
    # generations (as in a Dataset's map): none is promoted to the oldest one.
    counts = [0, 0, 0]

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            counts[info["generation"]] += 1

    rows = 100_000
    source = IterableDataset.from_dict({"a": list(range(rows)), "s": ["x"] * rows})
    chain = source.map(lambda r: {"n": r["a"] + 1}).filter(lambda r: r["n"] % 3 != 0)
    gc.collect()
    gc.callbacks.append(count)
    try:
        total = sum(row["n"] for row in chain.map(lambda r: {"m": r["n"] * 2}))
    finally:
        gc.callbacks.remove(count)
    assert total == sum(n for n in range(1, rows + 1) if n % 3)
    assert counts[2] == 0


def test_an_example_kept_by_a_function_keeps_its_values_when_later_operators_change_theirs() -> (
    None
):
    kept: list[dict[str, Any]] = []

    def keep(example: dict[str, Any]) -> dict[str, Any]:
        kept.append(example)  # read only after the chain has changed the rows handed on
        return {"k": 1}

    source = IterableDataset.from_dict({"a": list(range(2500)), "s": ["x"] * 2500})
    out = list(source.map(lambda r: {"n": r["a"]}).map(keep).map(_replace))
    assert [row["a"] for row in out] == [2 * i + 1 for i in range(2500)]
    assert [row["a"] for row in kept] == list(range(2500))
    assert [dict(row) for row in kept[:2]] == [
        {"a": 0, "s": "x", "n": 0},
        {"a": 1, "s": "x", "n": 1},
    ]


def test_a_batch_of_none_keeps_the_type_earlier_batches_had() -> None:
    def text(example: dict[str, Any]) -> dict[str, Any]:
        return {"t": None if 1000 <= example["a"] < 2000 else "x"}

    source = IterableDataset.from_dict({"a": list(range(3000))})
    fused, unfused = source.map(text), source.map(text).map(None)
    assert list(fused) == list(unfused)
    _assert_same_arrow(fused, unfused)
    types = {table.schema.field("t").type for table in fused.with_format("arrow")}
    assert types == {pa.string()}


def _raises_at(k: int) -> Any:
    def function(example: dict[str, Any]) -> dict[str, Any]:
        if example["a"] == k:
            raise ValueError(f"bad example {k}")
        return {"n": 1}

    return function


def _value_at(k: int, value: Any, other: Any = 1) -> Any:
    def function(example: dict[str, Any]) -> Any:
        return {"v": value if example["a"] == k else other}

    return function


def _result_at(k: int, result: Any) -> Any:
    def function(example: dict[str, Any]) -> Any:
        return result if example["a"] == k else {"v": 1}

    return function


def _run(dataset: IterableDataset) -> tuple[list[dict[str, Any]], tuple[type, str] | None]:
    """The rows handed out, and the error that stopped the iteration (None if none)."""
    rows: list[dict[str, Any]] = []
    try:
        rows.extend(dataset)
    except Exception as error:  # compared between the two runs
        return rows, (type(error), str(error))
    return rows, None


_UNSTORABLE = object()

HOSTILE = [
    pytest.param(_raises_at, id="raises"),
    pytest.param(lambda k: _value_at(k, _UNSTORABLE), id="unstorable-object"),
    pytest.param(lambda k: _value_at(k, 2**64), id="int-beyond-uint64"),
    pytest.param(lambda k: _value_at(k, 2**63), id="int-beyond-int64"),
    pytest.param(lambda k: _value_at(k, "\ud800", "s"), id="lone-surrogate"),
    pytest.param(lambda k: _value_at(k, True), id="bool-among-ints"),
    pytest.param(lambda k: _value_at(k, "s"), id="str-among-ints"),
    pytest.param(lambda k: _value_at(k, 0.5), id="float-among-ints"),
    pytest.param(lambda k: _value_at(k, [1]), id="list-among-ints"),
    pytest.param(lambda k: _result_at(k, None), id="none-among-dicts"),
    pytest.param(lambda k: _result_at(k, [1]), id="list-result"),
    pytest.param(lambda k: _result_at(k, {"w": 1}), id="other-keys"),
    pytest.param(lambda k: _result_at(k, {"v": 1, "w": 1}), id="extra-key"),
    pytest.param(lambda k: _result_at(k, {}), id="empty-dict"),
    pytest.param(lambda k: _result_at(k, {1: 2}), id="int-key"),
    pytest.param(lambda k: _result_at(k, collections.Counter(w=1)), id="counter"),
]


@pytest.mark.parametrize("make", HOSTILE)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(0, 2400), then_filter=st.booleans())
def test_fused_operators_fail_at_the_example_unfused_ones_fail_at(
    make: Any, k: int, then_filter: bool
) -> None:
    """A value Arrow refuses (or converts) is refused (converted) the same way, as early."""
    runs = []
    for fused in (True, False):
        dataset = IterableDataset.from_dict({"a": list(range(2500))}).map(make(k))
        if not fused:
            dataset = dataset.map(None)
        if then_filter:
            dataset = dataset.filter(_keep)
        runs.append(_run(dataset))
    assert runs[0] == runs[1]
    assert [_types(row) for row in runs[0][0]] == [_types(row) for row in runs[1][0]]


def test_decoded_json_values_are_never_handed_on_shared() -> None:
    features = Features({"a": Value("int64"), "j": Json()})
    values = [{"k": [i]} if i % 2 else [i, {"x": None}] for i in range(1500)]
    data = {"a": list(range(1500)), "j": values}

    def touch(example: dict[str, Any]) -> dict[str, Any]:
        json_value = example["j"]
        (json_value.setdefault("seen", 1) if isinstance(json_value, dict) else json_value.append(0))
        return {"n": example["a"] + 1}

    def keep_and_touch(example: dict[str, Any]) -> bool:
        example["j"] = None
        return example["a"] % 3 != 0

    outputs = []
    for fused in (True, False):
        dataset = IterableDataset.from_dict(data, features=features).map(touch)
        if not fused:
            dataset = dataset.map(None)
        outputs.append(list(dataset.filter(keep_and_touch).map(_add)))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == {"a": 1, "j": {"k": [1]}, "n": 0}


def test_a_decoded_column_returned_as_it_is_keeps_its_feature() -> None:
    features = Features({"a": Value("int64"), "j": Json()})
    data = {"a": list(range(6)), "j": [1, 2, 3, 4, 5, 6]}  # Json values that are ints
    source = IterableDataset.from_dict(data, features=features)

    def same(example: dict[str, Any]) -> dict[str, Any]:
        return {"j": example["j"]}

    fused = source.map(same).filter(_keep)
    unfused = source.map(same).map(None).filter(_keep)
    assert list(fused) == list(unfused) == [{"a": a, "j": a + 1} for a in (1, 2, 4, 5)]
    _assert_same_arrow(fused, unfused)
    assert next(fused.with_format("arrow").iter(batch_size=6)).schema.field("j").type == pa.json_()


MIXED_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(codec="utf-8")),
    st.text(alphabet=st.characters(categories=["Cs"]), min_size=1, max_size=2),
    st.binary(),
    st.sampled_from([np.int64(3), np.float32(0.5), [1], {"k": 1}, bytearray(b"x")]),
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(MIXED_SCALARS), st.lists(MIXED_SCALARS, max_size=1).map(lambda v: v * 5)))
def test_arrow_type_is_only_given_when_arrow_gives_the_values_back(values: list[Any]) -> None:
    kind = arrow_type(values)
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        assert kind is None
        return
    if kind is not None:
        assert array.type == kind
        back = array.to_pylist()
        assert back == values
        assert [type(value) for value in back] == [type(value) for value in values]
