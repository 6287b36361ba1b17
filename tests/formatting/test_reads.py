"""What a function read of its batch: value reads count, name lookups do not."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from dagster_ds.formatting import Formatter, observed_reads, union_reads
from dagster_ds.formatting._lazy import LazyBatch

TABLE = pa.table({"text": ["a", "b"], "label": [0, 1], "flag": [True, False]})
EVERY = frozenset(TABLE.column_names)


def _reads(use: Callable[[Any], Any], input_columns: list[str] | None = None) -> Any:
    batch = Formatter().function_batch(TABLE)
    use(batch)
    return observed_reads(batch, input_columns)


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        pytest.param(lambda b: b["text"], {"text"}, id="getitem"),
        pytest.param(lambda b: b.get("label"), {"label"}, id="get"),
        pytest.param(lambda b: b.pop("flag"), {"flag"}, id="pop"),
        pytest.param(lambda b: ("text" in b, list(b.keys()), len(b), list(b)), set(), id="names"),
        pytest.param(lambda b: b.__setitem__("text", ["x", "y"]) or b["text"], set(), id="set"),
        pytest.param(lambda b: b.__delitem__("label"), set(), id="delete"),
        pytest.param(lambda b: b.copy()["label"], {"label"}, id="copy"),
        pytest.param(lambda b: (b | {"new": [1, 2]})["text"], {"text"}, id="or"),
        pytest.param(lambda b: dict(b), EVERY, id="dict"),
        pytest.param(lambda b: {**b}, EVERY, id="unpack"),
        pytest.param(lambda b: list(b.items()), EVERY, id="items"),
        pytest.param(lambda b: list(b.values()), EVERY, id="values"),
        pytest.param(repr, EVERY, id="repr"),
        pytest.param(lambda b: b == {}, EVERY, id="equals"),
        pytest.param(pickle.dumps, EVERY, id="pickle"),
        pytest.param(copy.deepcopy, EVERY, id="deepcopy"),
        pytest.param(lambda b: ({"new": [1, 2]} | b)["label"], {"label"}, id="ror"),
    ],
)
def test_a_lazy_batch_records_the_values_read(
    use: Callable[[Any], Any], expected: set[str]
) -> None:
    assert _reads(use) == frozenset(expected)


def test_input_columns_are_exactly_the_reads() -> None:
    assert _reads(lambda _batch: None, ["label"]) == {"label"}


@pytest.mark.parametrize("name", ["numpy", "pandas", "arrow", "torch"])
def test_any_other_format_reads_every_column(name: str) -> None:
    if name == "torch":
        pytest.importorskip("torch")
    assert observed_reads(Formatter.create(name).function_batch(TABLE), None) is None


def test_a_custom_transform_or_a_plain_row_reads_every_column() -> None:
    custom = Formatter.custom(lambda columns: columns).function_batch(TABLE)
    assert observed_reads(custom, None) is None
    assert observed_reads(Formatter().rows(TABLE), None) is None


def test_reads_are_united_and_every_column_absorbs() -> None:
    assert union_reads(frozenset({"a"}), frozenset({"b"})) == {"a", "b"}
    assert union_reads(frozenset({"a"}), None) is None
    assert union_reads(None, frozenset()) is None


def test_a_batch_of_one_shard_is_not_another_batch_s_read() -> None:
    one, other = LazyBatch(TABLE), LazyBatch(TABLE)
    one["text"]
    assert other.read_columns() == frozenset()
