"""The source node: shards read one after the other, resumable at any row."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from dagster_ds.errors import InvalidStateError
from dagster_ds.streaming._node import Node, State, field, shard_indices
from dagster_ds.streaming._shards import Shard


@dataclass(frozen=True, eq=False)
class ShardSource(Node):
    """Rows of a list of shards, in order. State: ``{"shard": i, "row": rows read in it}``."""

    shards: tuple[Shard, ...]
    known_schema: pa.Schema | None = None

    @property
    def children(self) -> tuple[Node, ...]:
        return ()

    def with_children(self, children: Sequence[Node]) -> Node:
        return self

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        first, row = 0, 0
        if state is not None:
            first = field(state, "shard", int, "source")
            row = field(state, "row", int, "source")
            if not 0 <= first <= len(self.shards) or row < 0:
                raise InvalidStateError(
                    f"source: the state points at row {row} of shard {first}, but this source "
                    f"has {len(self.shards)} shard(s); pass a state_dict() saved from the same "
                    "pipeline."
                )
        for index in range(first, len(self.shards)):
            start = row if index == first else 0
            position = start
            for batch in self.shards[index].read(start):
                position += batch.num_rows
                yield batch, {"shard": index, "row": position}

    @property
    def schema(self) -> pa.Schema | None:
        if self.known_schema is not None:
            return self.known_schema
        return self.shards[0].schema if self.shards else None

    @property
    def num_shards(self) -> int:
        return len(self.shards)

    @property
    def shard_order_fixed(self) -> bool:
        return False

    def describe(self) -> str:
        return f"Source[{len(self.shards)}]"

    def _with_shards(self, shards: Sequence[Shard]) -> ShardSource:
        return ShardSource(tuple(shards), self.known_schema)

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Node:
        kept = shard_indices(len(self.shards), num_shards, index, contiguous)
        return self._with_shards([self.shards[i] for i in kept])

    def shuffle_shards(self, seed: int) -> Node:
        shards = list(self.shards)
        random.Random(seed).shuffle(shards)
        return self._with_shards(shards)

    def reshard(self) -> Node:
        return self._with_shards([piece for shard in self.shards for piece in shard.split()])

    def for_epoch(self, epoch: int) -> Node:
        return self

    def for_worker(self, worker: int) -> Node:
        return self
