"""The shuffle buffer, whose rows are part of the state (the anchor loses them on resume)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from dagster_ds.features import concat_batches
from dagster_ds.streaming._arrow import from_base64_ipc, take, to_base64_ipc
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import Node, Snapshot, State, UnaryNode, field
from dagster_ds.streaming._rng import derive_seed, restore_rng, rng_state

_DRAIN_ROWS = 1000  # rows per batch when the buffer is emptied at the end


@dataclass(frozen=True, eq=False)
class BufferRows(Snapshot):
    """The rows of a shuffle buffer, kept by reference until a state is asked for."""

    rows: pa.RecordBatch | None

    def to_json(self) -> Any:
        return to_base64_ipc(self.rows) if self.rows is not None else None


def _buffer_from_state(value: Any) -> pa.RecordBatch | None:
    if value is None:
        return None
    if isinstance(value, BufferRows):
        return value.rows
    return from_base64_ipc(str(value), "shuffle")


@dataclass(frozen=True, eq=False)
class BufferShuffleNode(UnaryNode):
    """Rows drawn at random from a buffer of ``buffer_size`` rows, refilled from the input.

    The anchor's documented algorithm: fill the buffer, then for each new row yield
    a random buffered row and put the new row in its place; at the end, yield the
    buffer in a random order. Decisions are made per row (one draw each), so the
    order does not depend on the input's batches. State: ``{"child": position,
    "rng": generator state, "buffer": base64 Arrow IPC of the buffered rows,
    "draining": bool}``.
    """

    buffer_size: int = 1000
    seed: int = 0

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        if state is None:
            cursor, rng = Cursor(self.child), random.Random(self.seed)
            buffer, draining = None, False
        else:
            cursor = Cursor(self.child, field(state, "child", dict, "shuffle"))
            rng = restore_rng(field(state, "rng", list, "shuffle"), "shuffle")
            buffer = _buffer_from_state(state.get("buffer"))
            draining = field(state, "draining", bool, "shuffle")
        size = self.buffer_size
        while not draining:
            rows = cursor.read(max(size, _DRAIN_ROWS))
            if rows is None:
                draining = True
                if buffer is not None:
                    order = list(range(buffer.num_rows))
                    rng.shuffle(order)
                    buffer = take(buffer, order)
                break
            buffer, output = _refill(buffer, rows, size, rng)
            if output is not None:
                yield output, self._checkpoint(cursor, rng, buffer, False)
        while buffer is not None and buffer.num_rows:
            output, rest = buffer.slice(0, _DRAIN_ROWS), buffer.slice(_DRAIN_ROWS)
            buffer = rest if rest.num_rows else None
            yield output, self._checkpoint(cursor, rng, buffer, True)

    @staticmethod
    def _checkpoint(
        cursor: Cursor, rng: random.Random, buffer: pa.RecordBatch | None, draining: bool
    ) -> State:
        return {
            "child": cursor.position(),
            "rng": rng_state(rng),
            "buffer": BufferRows(buffer),
            "draining": draining,
        }

    def for_epoch(self, epoch: int) -> Node:
        child = self.child.for_epoch(epoch)
        if epoch == 0:
            return replace(self, child=child)
        if not child.shard_order_fixed:
            child = child.shuffle_shards(derive_seed(self.seed, "shards", epoch))
        return replace(self, child=child, seed=derive_seed(self.seed, "epoch", epoch))

    def for_worker(self, worker: int) -> Node:
        child = self.child.for_worker(worker)
        return replace(self, child=child, seed=derive_seed(self.seed, "worker", worker))


def _refill(
    buffer: pa.RecordBatch | None, rows: pa.RecordBatch, size: int, rng: random.Random
) -> tuple[pa.RecordBatch, pa.RecordBatch | None]:
    """Pass ``rows`` through the buffer: the new buffer, and the rows it let out."""
    held = buffer.num_rows if buffer is not None else 0
    pool = concat_batches([buffer, rows]) if buffer is not None else rows
    slots = list(range(held))
    out: list[int] = []
    draw = rng.random
    for incoming in range(held, held + rows.num_rows):
        if len(slots) < size:
            slots.append(incoming)
        else:
            slot = int(draw() * size)
            out.append(slots[slot])
            slots[slot] = incoming
    kept = take(pool, slots)
    output = take(pool, out) if out else None
    return kept, output
