"""LazyBatch: a dict of Python lists whose columns are converted from Arrow when read."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagster_ds.features import Features, Json, Value
from dagster_ds.formatting import Formatter
from dagster_ds.formatting._lazy import LazyBatch
from dagster_ds.formatting._outputs import deleted_columns, function_output

TABLE = pa.table({"a": [1, 2, 3], "b": ["x", "y", None], "c": [[1], [], [2, 3]]})


def eager() -> dict[str, list[Any]]:
    return TABLE.to_pydict()


def test_a_column_is_converted_when_read_and_only_then() -> None:
    batch = LazyBatch(TABLE)
    assert batch.unread() == ["a", "b", "c"]
    assert batch["b"] == ["x", "y", None]
    assert batch.unread() == ["a", "c"]
    assert batch.changed() == {"b": ["x", "y", None]}
    assert batch["b"] is batch["b"]  # converted once: changes to the list stay


def test_it_reads_as_the_eager_dict() -> None:
    batch = LazyBatch(TABLE)
    assert list(batch) == ["a", "b", "c"]
    assert len(batch) == 3
    assert "a" in batch
    assert "z" not in batch
    assert list(batch.keys()) == ["a", "b", "c"]
    assert batch.unread() == ["a", "b", "c"]  # keys, len and in convert nothing
    assert dict(batch) == eager()
    assert {**LazyBatch(TABLE)} == eager()
    assert list(LazyBatch(TABLE).items()) == list(eager().items())
    assert list(LazyBatch(TABLE).values()) == list(eager().values())
    assert repr(LazyBatch(TABLE)) == repr(eager())
    assert LazyBatch(TABLE) == eager()
    assert LazyBatch(TABLE).get("z", 5) == 5


def test_set_delete_clear_and_pop() -> None:
    batch = LazyBatch(TABLE)
    batch["n"] = [0, 0, 0]
    del batch["a"]
    assert list(batch) == ["b", "c", "n"]
    assert batch.deleted() == ["a"]
    assert batch.changed() == {"n": [0, 0, 0]}
    assert batch.pop("b") == ["x", "y", None]
    with pytest.raises(KeyError):
        del batch["a"]
    batch.clear()
    assert len(batch) == 0
    assert batch.deleted() == ["a", "b", "c"]


def test_copies_are_independent_and_unions_follow_dict() -> None:
    batch = LazyBatch(TABLE)
    twin = batch.copy()
    twin["a"].append(4)
    del twin["b"]
    assert batch["a"] == [1, 2, 3]
    assert "b" in batch
    assert copy.copy(batch).unread() == ["b", "c"]
    assert batch | {"a": [9]} == eager() | {"a": [9]}
    assert {"a": [9], "z": [0]} | LazyBatch(TABLE) == {"a": [9], "z": [0]} | eager()
    assert list({"z": [0]} | LazyBatch(TABLE)) == ["z", "a", "b", "c"]
    updated = LazyBatch(TABLE)
    updated |= {"a": [7], "d": [8]}
    assert updated.unread() == ["b", "c"]
    assert updated == eager() | {"a": [7], "d": [8]}
    assert LazyBatch(TABLE) | LazyBatch(pa.table({"q": [1, 2, 3]})) == eager() | {"q": [1, 2, 3]}


def test_pickles_and_deep_copies_as_the_plain_dict() -> None:
    batch = LazyBatch(TABLE)
    assert pickle.loads(pickle.dumps(batch)) == eager()
    deep = copy.deepcopy(batch)
    assert type(deep) is dict
    assert deep == eager()


def test_json_values_decode_on_access() -> None:
    features = Features({"j": Json(), "k": Value("int64")})
    table = pa.table(
        {"j": ['{"x": 1}', "[2]"], "k": [1, 2]},
        schema=features.arrow_schema,
    )
    batch = Formatter().function_batch(table)
    assert isinstance(batch, LazyBatch)
    assert batch["j"] == [{"x": 1}, [2]]
    assert batch.unread() == ["k"]


def test_only_the_default_format_is_lazy() -> None:
    assert isinstance(Formatter().function_batch(TABLE), LazyBatch)
    assert type(Formatter.create("python", columns=["a"]).function_batch(TABLE)) is dict
    assert type(Formatter.create("numpy").function_batch(TABLE)) is dict
    duplicated = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    assert not isinstance(Formatter().function_batch(duplicated), LazyBatch)


def test_a_returned_batch_gives_only_the_columns_read_or_set() -> None:
    batch = LazyBatch(TABLE)
    batch["b"][0] = "changed"
    batch["n"] = [1, 2, 3]
    del batch["c"]
    output = function_output(batch, batch, ["n"], "examples 0 to 2")
    assert output is not None
    assert output.to_pydict() == {"b": ["changed", "y", None]}
    assert deleted_columns(batch, batch) == ["c"]
    assert deleted_columns(batch, None) == []  # None: the rows are left as they were
    untouched = LazyBatch(TABLE)
    assert function_output(untouched, untouched, [], "examples 0 to 2") is None


# -- the lazy batch against the eager dict, under random edits ------------------------

NAMES = ["a", "b", "c", "d"]
EDITS = st.lists(
    st.tuples(
        st.sampled_from(["read", "mutate", "append", "set", "delete", "contains", "len"]),
        st.sampled_from([*NAMES, "new"]),
    ),
    max_size=8,
)


def edit(batch: Any, edits: list[tuple[str, str]]) -> list[Any]:
    """Apply ``edits`` to ``batch``; what the function saw along the way."""
    seen: list[Any] = []
    for kind, name in edits:
        if kind == "read" and name in batch:
            seen.append(list(batch[name]))
        elif kind == "mutate" and name in batch:
            batch[name][0] = 100
        elif kind == "append" and name in batch:
            batch[name].append(7)
        elif kind == "set":
            batch[name] = [5, 6, 7]
        elif kind == "delete" and name in batch:
            del batch[name]
        elif kind == "contains":
            seen.append(name in batch)
        elif kind == "len":
            seen.append((len(batch), list(batch)))
    return seen


@settings(max_examples=200, deadline=None)
@given(edits=EDITS)
def test_random_edits_leave_the_same_mapping_as_on_the_eager_dict(
    edits: list[tuple[str, str]],
) -> None:
    table = pa.table({name: [1, 2, 3] for name in NAMES})
    lazy, plain = LazyBatch(table), table.to_pydict()
    assert edit(lazy, edits) == edit(plain, edits)
    assert list(lazy) == list(plain)
    for name in lazy.unread():  # what was never read nor set is the input's column
        assert plain[name] == table.column(name).to_pylist()
    assert dict(lazy) == plain


def test_a_batch_kept_from_another_call_gives_all_its_columns() -> None:
    earlier = LazyBatch(TABLE.slice(0, 2))
    current = LazyBatch(TABLE.slice(1, 2))
    output = function_output(earlier, current, [], "examples 1 to 2")
    assert output is not None
    assert output.to_pydict() == TABLE.slice(0, 2).to_pydict()
    twin = current.copy()
    twin["n"] = [0, 0]
    assert function_output(twin, current, [], "examples 1 to 2").to_pydict() == {"n": [0, 0]}  # type: ignore[union-attr]
