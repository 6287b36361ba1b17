"""The resumable-state contract, checked on every operator node, and the Cursor over it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import dagster_ds.streaming as streaming_package
from dagster_ds.features import Features, Value
from dagster_ds.formatting._calls import FunctionCall
from dagster_ds.streaming._batch import BatchNode, RunBatchNode
from dagster_ds.streaming._columns import CastColumns, RemoveColumns, RenameColumns, SelectColumns
from dagster_ds.streaming._concat import EmptyNode, HorizontalConcat, VerticalConcat
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._filter import FilterNode
from dagster_ds.streaming._interleave import InterleaveNode
from dagster_ds.streaming._limit import SkipNode, TakeNode
from dagster_ds.streaming._map import MapNode
from dagster_ds.streaming._node import BatchwiseNode, Node, UnaryNode, materialize
from dagster_ds.streaming._shards import TableShard
from dagster_ds.streaming._shuffle import BufferShuffleNode
from dagster_ds.streaming._source import ShardSource

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string())])


def source(rows: int = 37, shards: int = 3, batch_size: int = 4) -> ShardSource:
    table = pa.table({"a": list(range(rows)), "b": [f"v{i}" for i in range(rows)]})
    bounds = [rows * i // shards for i in range(shards + 1)]
    pieces = tuple(
        TableShard(table, bounds[i], bounds[i + 1], batch_size=batch_size) for i in range(shards)
    )
    return ShardSource(pieces, table.schema)


def _double(example: dict[str, Any]) -> dict[str, Any]:
    return {"a": example["a"] * 2}


NODES: dict[str, Callable[[], Node]] = {
    "ShardSource": source,
    "EmptyNode": lambda: EmptyNode(SCHEMA),
    "RenameColumns": lambda: RenameColumns(source(), mapping=(("b", "c"),)),
    "SelectColumns": lambda: SelectColumns(source(), names=("b",)),
    "RemoveColumns": lambda: RemoveColumns(source(), names=("a",)),
    "CastColumns": lambda: CastColumns(
        source(), features=Features({"a": Value("int32"), "b": Value("string")})
    ),
    "MapNode": lambda: MapNode(source(), call=FunctionCall(_double)),
    "MapNode-batched": lambda: MapNode(
        source(),
        call=FunctionCall(lambda b: {"n": [len(b["a"])] * len(b["a"])}),
        batched=True,
        batch_size=5,
    ),
    "FilterNode": lambda: FilterNode(source(), call=FunctionCall(lambda x: x["a"] % 3 != 0)),
    "BatchNode": lambda: BatchNode(source(), batch_size=3),
    "RunBatchNode": lambda: RunBatchNode(
        MapNode(source(), call=FunctionCall(lambda x: {"k": x["a"] // 5})), by_column=("k",)
    ),
    "TakeNode": lambda: TakeNode(source(), n=23),
    "SkipNode": lambda: SkipNode(source(), n=9),
    "BufferShuffleNode": lambda: BufferShuffleNode(source(200, 4), buffer_size=7, seed=3),
    "VerticalConcat": lambda: VerticalConcat((source(), source(11, 2)), SCHEMA),
    "HorizontalConcat": lambda: HorizontalConcat(
        (source(), RenameColumns(source(), mapping=(("a", "x"), ("b", "y"))))
    ),
    "InterleaveNode": lambda: InterleaveNode(
        (source(), source(9, 1)), SCHEMA, stopping_strategy="all_exhausted"
    ),
    "InterleaveNode-random": lambda: InterleaveNode(
        (source(), source(9, 1)), SCHEMA, probabilities=(0.4, 0.6), seed=2
    ),
}


def _rows(pairs: list[tuple[pa.RecordBatch, Any]]) -> list[dict[str, Any]]:
    return [row for batch, _ in pairs for row in batch.to_pylist()]


@pytest.mark.parametrize("name", sorted(NODES))
def test_every_checkpoint_resumes_with_exactly_the_following_rows(name: str) -> None:
    node = NODES[name]()
    pairs = list(node.batches(None))
    full = _rows(pairs)
    assert full or name == "EmptyNode"
    consumed = 0
    for batch, checkpoint in pairs:
        consumed += batch.num_rows
        saved = json.loads(json.dumps(materialize(checkpoint)))
        assert _rows(list(node.batches(saved))) == full[consumed:], f"after {consumed} rows"
        assert _rows(list(node.batches(checkpoint))) == full[consumed:]


def test_every_operator_node_is_covered_by_the_contract_test() -> None:
    def subclasses(cls: type) -> set[type]:
        found = set()
        for sub in cls.__subclasses__():
            found |= {sub} | subclasses(sub)
        return found

    package = streaming_package.__name__
    concrete = {
        cls.__name__
        for cls in subclasses(Node)
        if cls.__module__.startswith(package) and cls not in (UnaryNode, BatchwiseNode)
    }
    tested = {name.split("-")[0] for name in NODES}
    assert concrete == tested


def test_the_contract_is_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Node()  # type: ignore[abstract]


def test_cursor_positions_inside_batches() -> None:
    node = source(37, 3, batch_size=4)
    cursor = Cursor(node)
    assert cursor.read(6) is not None
    position = cursor.position()
    assert position["skip"] == 2  # two rows into the second batch of 4
    rest = Cursor(node, json.loads(json.dumps(materialize(position)))).read(None)
    assert rest is not None
    assert rest.column("a").to_pylist() == list(range(6, 37))


def test_cursor_skips_across_several_batches_and_reads_across_shards() -> None:
    node = source(37, 3, batch_size=4)
    cursor = Cursor(node, {"state": None, "skip": 30})
    assert cursor.available() == 2  # rows 30 and 31: the end of the batch of rows 28-31
    piece = cursor.read(5)
    assert piece is not None
    assert piece.column("a").to_pylist() == [30, 31, 32, 33, 34]
    assert cursor.take(100) is not None  # the rest of one batch only
    assert cursor.read(100) is not None
    assert cursor.take() is None
    assert cursor.available() == 0
