"""Reading a node row by row while knowing, at every row, where to resume."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeAlias

import pyarrow as pa

from dagster_ds.features import concat_batches
from dagster_ds.streaming._node import Batch, Node, Rows, State, arrow_of, field

# Where a reader of a node stands: the node's checkpoint before the batch being read
# (None: the start) and how many rows after that checkpoint were consumed.
Position: TypeAlias = dict[str, Any]


def start_position() -> Position:
    """The position before the first row."""
    return {"state": None, "skip": 0}


class Cursor:
    """Consumes a node's rows in slices of any size, with an exact resume position.

    `position` is valid between any two rows, even in the middle of a batch:
    ``Cursor(node, cursor.position())`` continues with the next row. Operators that
    regroup rows (batched map, batch, shuffle, interleave) keep their children's
    positions in their own checkpoints this way.

    With ``rows=True`` the node is read through `Node.row_batches`, and `take_rows`
    also returns the Python rows the node made (when it made them), with a batch that
    may be a `DeferredBatch` (`take` and `read` always give Arrow batches).
    """

    def __init__(self, node: Node, position: Position | None = None, rows: bool = False) -> None:
        where = position if position is not None else start_position()
        name = type(node).__name__
        base: State | None = where.get("state") if isinstance(where, dict) else None  # pyright: ignore[reportUnnecessaryIsInstance]
        self._skip: int = field(where, "skip", int, name)
        self._base = base
        self._batches = node.row_batches(base) if rows else _without_rows(node.batches(base))
        self._batch: Batch | None = None
        self._rows: Rows | None = None
        self._after: State | None = None
        self._offset = 0
        self._done = False

    def _load(self) -> bool:
        """Make sure a batch with unread rows is loaded; False at the end of the node."""
        batch = self._batch
        while batch is None or self._offset >= batch.num_rows:
            if batch is not None:
                self._base, self._batch, self._rows, self._offset = self._after, None, None, 0
            if self._done:
                return False
            item = next(self._batches, None)
            if item is None:
                self._done = True
                return False
            batch, self._rows, self._after = item
            self._batch = batch
            if self._skip:
                self._offset = min(self._skip, batch.num_rows)
                self._skip -= self._offset
        return True

    def available(self) -> int:
        """Rows left in the batch being read (loading the next one if needed); 0 at the end."""
        if not self._load():
            return 0
        assert self._batch is not None
        return self._batch.num_rows - self._offset

    def take(self, limit: int | None = None) -> pa.RecordBatch | None:
        """Up to ``limit`` rows of the batch being read (all when None); None at the end."""
        piece = self.take_rows(limit)[0]
        return arrow_of(piece) if piece is not None else None

    def take_rows(self, limit: int | None = None) -> tuple[Batch | None, Rows | None]:
        """`take`, with those rows as Python dicts when the node made them (else None).

        The rows are the caller's to change: nothing else holds them.
        """
        if not self._load():
            return None, None
        batch = self._batch
        assert batch is not None
        start = self._offset
        count = batch.num_rows - start
        if limit is not None:
            count = min(count, limit)
        rows = self._rows
        if start == 0 and count == batch.num_rows:
            piece = batch
        else:
            piece = batch.slice(start, count)
            rows = rows[start : start + count] if rows is not None else None
        self._offset += count
        return piece, rows

    def read(self, rows: int | None) -> pa.RecordBatch | None:
        """The next ``rows`` rows across batches (fewer at the end; every row when None)."""
        batch, start = self._batch, self._offset
        if rows and batch is not None and batch.num_rows - start >= rows:
            # The batch being read holds them all: one slice (the common case).
            self._offset = start + rows
            return arrow_of(batch).slice(start, rows)
        pieces: list[pa.RecordBatch] = []
        wanted = rows
        while wanted is None or wanted > 0:
            piece = self.take(wanted)
            if piece is None:
                break
            pieces.append(piece)
            if wanted is not None:
                wanted -= piece.num_rows
        if not pieces:
            return None
        return concat_batches(pieces)

    def position(self) -> Position:
        """Where the next row is: resume with ``Cursor(node, position)``."""
        batch = self._batch
        if batch is None:
            return {"state": self._base, "skip": self._skip}
        if self._offset >= batch.num_rows:
            return {"state": self._after, "skip": 0}
        return {"state": self._base, "skip": self._offset}


def _without_rows(
    batches: Iterator[tuple[pa.RecordBatch, State]],
) -> Iterator[tuple[Batch, Rows | None, State]]:
    for batch, checkpoint in batches:
        yield batch, None, checkpoint
