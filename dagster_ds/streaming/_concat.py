"""Concatenation: datasets one after the other (axis 0) or side by side (axis 1)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from dagster_ds.errors import RowCountMismatchError
from dagster_ds.features import conform
from dagster_ds.streaming._arrow import hstack, side_by_side_schema
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import Node, State, check_count, field, shard_indices


@dataclass(frozen=True, eq=False)
class EmptyNode(Node):
    """No rows (a shard group that got no shard)."""

    known_schema: pa.Schema | None = None

    @property
    def children(self) -> tuple[Node, ...]:
        return ()

    def with_children(self, children: Sequence[Node]) -> Node:
        return self

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        return iter(())

    @property
    def schema(self) -> pa.Schema | None:
        return self.known_schema

    @property
    def num_shards(self) -> int:
        return 0

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Node:
        return self


def _single_shards(children: Sequence[Node]) -> list[Node]:
    return [
        child if child.num_shards == 1 else child.shard(child.num_shards, index, True)
        for child in children
        for index in range(child.num_shards)
    ]


@dataclass(frozen=True, eq=False)
class VerticalConcat(Node):
    """The rows of each child in turn, in ``schema``. State: ``{"index": i, "child": state}``.

    Its shards are its children's shards, in order: sharding and shuffling shards
    work across all of them (as the anchor).
    """

    parts: tuple[Node, ...]
    unified: pa.Schema

    @property
    def children(self) -> tuple[Node, ...]:
        return self.parts

    def with_children(self, children: Sequence[Node]) -> Node:
        return VerticalConcat(tuple(children), self.unified)

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        first = field(state, "index", int, "concatenate") if state else 0
        resume: State | None = state.get("child") if state else None
        for index in range(first, len(self.parts)):
            start = resume if index == first else None
            for batch, checkpoint in self.parts[index].batches(start):
                yield conform(batch, self.unified), {"index": index, "child": checkpoint}

    @property
    def schema(self) -> pa.Schema | None:
        return self.unified

    @property
    def num_shards(self) -> int:
        return sum(part.num_shards for part in self.parts)

    @property
    def shard_order_fixed(self) -> bool:
        return False

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Node:
        singles = _single_shards(self.parts)
        kept = shard_indices(len(singles), num_shards, index, contiguous)
        return self.with_children([singles[i] for i in kept])

    def shuffle_shards(self, seed: int) -> Node:
        singles = _single_shards(self.parts)
        random.Random(seed).shuffle(singles)
        return self.with_children(singles)


@dataclass(frozen=True, eq=False)
class HorizontalConcat(Node):
    """Rows of the children side by side; one shard. State: ``{"children": [position, ...]}``."""

    parts: tuple[Node, ...]

    @property
    def children(self) -> tuple[Node, ...]:
        return self.parts

    def with_children(self, children: Sequence[Node]) -> Node:
        return HorizontalConcat(tuple(children))

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        positions: list[Any] = [None] * len(self.parts)
        if state is not None:
            positions = field(state, "children", list, "concatenate(axis=1)")
            check_count(positions, len(self.parts), "concatenate(axis=1)")
        cursors = [Cursor(part, positions[i]) for i, part in enumerate(self.parts)]
        while True:
            counts = [cursor.available() for cursor in cursors]
            if not any(counts):
                return
            if not all(counts):
                ended = [i for i, count in enumerate(counts) if not count]
                raise RowCountMismatchError(
                    f"concatenate_datasets(axis=1): dataset(s) {ended} ran out of rows before "
                    f"the other(s); side by side concatenation needs datasets with the same "
                    "number of rows. Take the same number of rows from each (take(n))."
                )
            rows = min(counts)
            pieces = [cursor.take(rows) for cursor in cursors]
            merged = hstack([piece for piece in pieces if piece is not None])
            yield merged, {"children": [cursor.position() for cursor in cursors]}

    @property
    def schema(self) -> pa.Schema | None:
        schemas = [part.schema for part in self.parts]
        known = [schema for schema in schemas if schema is not None]
        return side_by_side_schema(known) if len(known) == len(schemas) else None

    @property
    def num_shards(self) -> int:
        return 1

    @property
    def shard_order_fixed(self) -> bool:
        return False

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Node:
        if shard_indices(1, num_shards, index, contiguous):
            return self
        return EmptyNode(self.schema)

    def shuffle_shards(self, seed: int) -> Node:
        return self

    def reshard(self) -> Node:
        return self
