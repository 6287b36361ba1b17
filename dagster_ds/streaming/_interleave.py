"""Interleaving: one example at a time from each source, in turn or at random."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from dagster_ds.features import concat_batches, conform
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import Node, State, check_count, field
from dagster_ds.streaming._rng import SourceDraws, derive_seed

STRATEGIES = ("first_exhausted", "all_exhausted", "all_exhausted_without_replacement")
_ROWS_PER_BATCH = 1000


@dataclass(frozen=True, eq=False)
class InterleaveNode(Node):
    """Sources interleaved example by example, with the anchor's stopping strategies.

    Without probabilities the sources take turns; with them each example's source is
    drawn at random. A source is exhausted when its last example has been yielded:
    ``first_exhausted`` stops there, ``all_exhausted`` restarts it until every source
    has been exhausted once, ``all_exhausted_without_replacement`` skips it until
    every source is. Sources are drawn as the anchor draws them (`SourceDraws`: numpy's
    generator). State: ``{"children": [position, ...], "exhausted": [bool, ...],
    "turn": next source, "rng": `SourceDraws.state` or None}``.
    """

    parts: tuple[Node, ...]
    unified: pa.Schema
    probabilities: tuple[float, ...] | None = None
    seed: int = 0
    stopping_strategy: str = "first_exhausted"

    @property
    def children(self) -> tuple[Node, ...]:
        return self.parts

    def with_children(self, children: Sequence[Node]) -> Node:
        return replace(self, parts=tuple(children))

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        count = len(self.parts)
        if not count:
            return
        if state is None:
            positions: list[Any] = [None] * count
            exhausted, turn = [False] * count, 0
            rng = SourceDraws(self.seed, self.probabilities) if self.probabilities else None
        else:
            positions = field(state, "children", list, "interleave")
            exhausted = list(field(state, "exhausted", list, "interleave"))
            check_count(positions, count, "interleave")
            check_count(exhausted, count, "interleave")
            turn = field(state, "turn", int, "interleave")
            rng = None
            if self.probabilities is not None:
                drawn = field(state, "rng", dict, "interleave")
                rng = SourceDraws(self.seed, self.probabilities, state=drawn)
        feeds = [_Feed(part, positions[i]) for i, part in enumerate(self.parts)]
        stop = any if self.stopping_strategy == "first_exhausted" else all
        skip_exhausted = self.stopping_strategy == "all_exhausted_without_replacement"
        done = False
        while not done:
            order: list[int] = []
            while len(order) < _ROWS_PER_BATCH:
                if stop(exhausted):
                    done = True
                    break
                if rng is None:
                    source, turn = turn, (turn + 1) % count
                else:
                    source = rng.draw()
                if skip_exhausted and exhausted[source]:
                    continue
                feed = feeds[source]
                if feed.pick():
                    order.append(source)
                if not feed.has_more():
                    exhausted[source] = True
                    if not skip_exhausted:
                        feeds[source] = _Feed(self.parts[source], None, feed.collect())
            if order:
                picks = [feed.collect() for feed in feeds]
                yield (
                    self._assemble(picks, order),
                    {
                        "children": [feed.cursor.position() for feed in feeds],
                        "exhausted": list(exhausted),
                        "turn": turn,
                        "rng": rng.state() if rng is not None else None,
                    },
                )

    def _assemble(self, picks: list[list[pa.RecordBatch]], order: list[int]) -> pa.RecordBatch:
        """The picked rows in the order they were picked."""
        tables: list[pa.RecordBatch] = []
        bases: list[int] = []
        total = 0
        for rows in picks:
            bases.append(total)
            if rows:
                table = conform(concat_batches(rows), self.unified)
                tables.append(table)
                total += table.num_rows
        seen = [0] * len(picks)
        indices: list[int] = []
        for source in order:
            indices.append(bases[source] + seen[source])
            seen[source] += 1
        pool = concat_batches(tables)
        return pool.take(pa.array(indices, pa.int64()))

    @property
    def schema(self) -> pa.Schema | None:
        return self.unified

    @property
    def num_shards(self) -> int:
        return min((part.num_shards for part in self.parts), default=0)

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Node:
        own = self.num_shards
        if num_shards < own:
            return self.with_children([p.shard(num_shards, index, contiguous) for p in self.parts])
        if index < own:
            return self.with_children([p.shard(own, index, contiguous) for p in self.parts])
        return self.with_children([])

    def for_epoch(self, epoch: int) -> Node:
        node = replace(self, parts=tuple(part.for_epoch(epoch) for part in self.parts))
        return replace(node, seed=derive_seed(self.seed, "epoch", epoch)) if epoch else node

    def for_worker(self, worker: int) -> Node:
        parts = tuple(part.for_worker(worker) for part in self.parts)
        return replace(self, parts=parts, seed=derive_seed(self.seed, "worker", worker))


class _Feed:
    """One source of an interleave: rows are counted as they are picked, sliced in runs."""

    def __init__(
        self, node: Node, position: Any, picked: list[pa.RecordBatch] | None = None
    ) -> None:
        self.cursor = Cursor(node, position)
        self._pending = 0
        self._left = 0
        self._picked: list[pa.RecordBatch] = picked or []

    def pick(self) -> bool:
        """Count one more row from this source; False if it has none left."""
        if not self._left and not self.has_more():
            return False
        self._pending += 1
        self._left -= 1
        return True

    def has_more(self) -> bool:
        """Whether a row is left (looking ahead into the next batch if needed)."""
        if self._left:
            return True
        self._flush()
        self._left = self.cursor.available()
        return self._left > 0

    def _flush(self) -> None:
        if self._pending:
            piece = self.cursor.take(self._pending)
            assert piece is not None
            assert piece.num_rows == self._pending
            self._picked.append(piece)
            self._pending = 0

    def collect(self) -> list[pa.RecordBatch]:
        """The rows picked since the last call, in order."""
        self._flush()
        picked, self._picked = self._picked, []
        return picked
