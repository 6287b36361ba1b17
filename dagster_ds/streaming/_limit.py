"""take and skip: the first ``n`` examples, or all but them. Both fix the shard order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import Node, State, UnaryNode, field


def split_number(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal counts, larger first (as the anchor)."""
    div, mod = divmod(total, parts)
    return [div + (1 if i < mod else 0) for i in range(parts)]


def _share(n: int, node: Node, num_shards: int, index: int) -> int:
    """The part of ``n`` a shard group keeps: ``n`` is split among the groups that get data."""
    sources = min(num_shards, node.num_shards)
    return split_number(n, sources)[index] if index < sources else 0


@dataclass(frozen=True, eq=False)
class TakeNode(UnaryNode):
    """The first ``n`` rows. State: ``{"child": position, "taken": rows given}``."""

    n: int = 0

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        taken = field(state, "taken", int, "take") if state else 0
        if taken >= self.n:
            return
        cursor = Cursor(self.child, field(state, "child", dict, "take") if state else None)
        while taken < self.n:
            piece = cursor.take(self.n - taken)
            if piece is None:
                return
            taken += piece.num_rows
            yield piece, {"child": cursor.position(), "taken": taken}

    @property
    def shard_order_fixed(self) -> bool:
        return True

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Node:
        child = self.child.shard(num_shards, index, contiguous)
        return TakeNode(child, _share(self.n, self.child, num_shards, index))

    def describe(self) -> str:
        return f"Take({self.child.describe()})"


@dataclass(frozen=True, eq=False)
class SkipNode(UnaryNode):
    """Every row after the first ``n``. State: ``{"child": position, "skipped": rows dropped}``."""

    n: int = 0

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        skipped = field(state, "skipped", int, "skip") if state else 0
        cursor = Cursor(self.child, field(state, "child", dict, "skip") if state else None)
        while skipped < self.n:
            piece = cursor.take(self.n - skipped)
            if piece is None:
                return
            skipped += piece.num_rows
        while (piece := cursor.take()) is not None:
            yield piece, {"child": cursor.position(), "skipped": skipped}

    @property
    def shard_order_fixed(self) -> bool:
        return True

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Node:
        child = self.child.shard(num_shards, index, contiguous)
        return SkipNode(child, _share(self.n, self.child, num_shards, index))

    def describe(self) -> str:
        return f"Skip({self.child.describe()})"
