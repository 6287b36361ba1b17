"""The contract every streaming operator implements: Arrow batches out, resumable state."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias, cast

import pyarrow as pa

from dagster_ds.errors import InvalidStateError

# A node's checkpoint: JSON data (dicts, lists, str, int, float, bool, None) that may
# also hold `Snapshot` objects, serialised only when a user asks for `state_dict()`.
State: TypeAlias = dict[str, Any]

# A batch's rows as Python dicts (equal to ``batch.to_pylist()``), made by a node whose
# function needed them anyway, so the next row-wise operator need not convert again.
Rows: TypeAlias = list[dict[str, Any]]


class DeferredBatch:
    """A batch handed on with its rows, whose Arrow form is built only if asked for.

    Per-example operators hand their rows on (see `dagster_ds.streaming._rowwise`);
    when the next operator only needs those rows, the Arrow batch is never built.
    ``schema`` and ``num_rows`` are those of the batch `arrow` builds.
    """

    __slots__ = ("_batch", "_build", "num_rows", "schema")

    def __init__(
        self, schema: pa.Schema, num_rows: int, build: Callable[[], pa.RecordBatch]
    ) -> None:
        self.schema = schema
        self.num_rows = num_rows
        self._build: Callable[[], pa.RecordBatch] | None = build
        self._batch: pa.RecordBatch | None = None

    def arrow(self) -> pa.RecordBatch:
        """The Arrow batch (built on the first call)."""
        if self._batch is None:
            assert self._build is not None
            self._batch, self._build = self._build(), None
        return self._batch

    def slice(self, offset: int, length: int) -> DeferredBatch:
        """Rows ``offset`` to ``offset + length``, as `pa.RecordBatch.slice`."""
        return DeferredBatch(self.schema, length, lambda: self.arrow().slice(offset, length))


# What `Node.row_batches` yields: an Arrow batch, or one built on demand.
Batch: TypeAlias = pa.RecordBatch | DeferredBatch


def arrow_of(batch: Batch) -> pa.RecordBatch:
    """The Arrow form of a batch `Node.row_batches` yielded."""
    return batch.arrow() if isinstance(batch, DeferredBatch) else batch


class Snapshot(abc.ABC):
    """Part of a checkpoint that is costly to serialise (a shuffle buffer's rows).

    A checkpoint is taken after every batch; most of them are never asked for, so
    the costly part is kept as a reference and turned into JSON on demand.
    """

    @abc.abstractmethod
    def to_json(self) -> Any:
        """The plain JSON form, which the node that made it accepts back."""


def materialize(value: Any) -> Any:
    """A checkpoint as plain JSON data: every `Snapshot` in it serialised."""
    if isinstance(value, Snapshot):
        return value.to_json()
    if isinstance(value, dict):
        items: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {key: materialize(items[key]) for key in items}
    if isinstance(value, list | tuple):
        return [materialize(item) for item in cast("Sequence[Any]", value)]
    return value


class Node(abc.ABC):
    """One operator of a streaming pipeline: a source, a transform or a combination.

    The contract, which `Cursor` and every operator rely on:

    - `batches` yields ``(batch, checkpoint)`` pairs; the checkpoint is the state
      *after* that batch, and is never mutated afterwards.
    - ``batches(checkpoint)`` yields exactly the rows that followed that batch in
      the uninterrupted run (batch boundaries may differ, rows may not).
    - The rows a node yields depend on its input rows and parameters only, never
      on how its input happened to be cut into batches.
    - A checkpoint passed through `materialize` (and ``json.dumps``/``loads``) is
      accepted by `batches` as well.

    Nodes are immutable: `shard`, `shuffle_shards`, `reshard`, `for_epoch` and
    `for_worker` return new nodes. The defaults apply the change to every child.
    """

    @property
    @abc.abstractmethod
    def children(self) -> tuple[Node, ...]:
        """The nodes this one reads from, in order."""

    @abc.abstractmethod
    def with_children(self, children: Sequence[Node]) -> Node:
        """A copy of this node reading from other children."""

    @abc.abstractmethod
    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        """Yield the batches after ``state`` (from the start when None), with checkpoints."""

    def row_batches(self, state: State | None) -> Iterator[tuple[Batch, Rows | None, State]]:
        """`batches`, each with its rows as Python dicts when this node made them, else None.

        Per-example map and filter hand on the rows their functions saw, so consecutive
        row-wise operators (and per-example iteration) convert each batch once. The rows
        equal ``arrow_of(batch).to_pylist()`` and belong to the caller; a batch with
        rows may be a `DeferredBatch`. The default makes none.
        """
        for batch, checkpoint in self.batches(state):
            yield batch, None, checkpoint

    @property
    def schema(self) -> pa.Schema | None:
        """The output schema when known without reading data, else None."""
        return self.children[0].schema if self.children else None

    @property
    def num_shards(self) -> int:
        """How many independently readable parts the output has."""
        return self.children[0].num_shards

    @property
    def shard_order_fixed(self) -> bool:
        """True when shuffling shards would change which rows come out (take, skip)."""
        return any(child.shard_order_fixed for child in self.children)

    def describe(self) -> str:
        """The pipeline's shape, to check that a state belongs to it."""
        inner = ", ".join(child.describe() for child in self.children)
        return f"{type(self).__name__}({inner})"

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Node:
        """The ``index``-th of ``num_shards`` groups of this node's shards."""
        return self.with_children([c.shard(num_shards, index, contiguous) for c in self.children])

    def shuffle_shards(self, seed: int) -> Node:
        """The same rows with the shards in a random order given by ``seed``."""
        return self.with_children([child.shuffle_shards(seed) for child in self.children])

    def reshard(self) -> Node:
        """The same rows split into more shards where the sources allow it."""
        return self.with_children([child.reshard() for child in self.children])

    def for_epoch(self, epoch: int) -> Node:
        """The node as iterated in ``epoch``: random operators take new seeds."""
        return self.with_children([child.for_epoch(epoch) for child in self.children])

    def for_worker(self, worker: int) -> Node:
        """The node as iterated by data loader worker ``worker``: new random streams."""
        return self.with_children([child.for_worker(worker) for child in self.children])


def shard_indices(total: int, num_shards: int, index: int, contiguous: bool) -> list[int]:
    """Which of ``total`` shards the ``index``-th of ``num_shards`` groups holds (as the anchor)."""
    if contiguous:
        div, mod = divmod(total, num_shards)
        start = div * index + min(index, mod)
        return list(range(start, start + div + (1 if index < mod else 0)))
    return list(range(index, total, num_shards))


def field(state: State, name: str, kind: type | tuple[type, ...], node: str) -> Any:
    """``state[name]``, checked to be of ``kind``; a clear error otherwise."""
    if not isinstance(state, dict) or name not in state:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidStateError(
            f"{node}: the state {_preview(state)} has no {name!r} entry; pass a state_dict() "
            "saved from the same pipeline."
        )
    value = state[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidStateError(
            f"{node}: state entry {name!r} is {_preview(value)}, not {_kind_name(kind)}; pass a "
            "state_dict() saved from the same pipeline."
        )
    return value


def check_count(values: Sequence[Any], count: int, node: str) -> None:
    """Raise `InvalidStateError` unless a state holds one entry per child."""
    if len(values) != count:
        raise InvalidStateError(
            f"{node}: the state has {len(values)} entries for {count} datasets; pass a "
            "state_dict() saved from the same pipeline."
        )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _preview(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True, eq=False)
class UnaryNode(Node):
    """A node that reads one child."""

    child: Node

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    def with_children(self, children: Sequence[Node]) -> Node:
        return replace(self, child=children[0])


@dataclass(frozen=True, eq=False)
class BatchwiseNode(UnaryNode):
    """A node that changes each batch on its own (same rows out): its state is its child's."""

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        for batch, checkpoint in self.child.batches(state):
            yield self.apply(batch), checkpoint

    @abc.abstractmethod
    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The output batch for one input batch."""
