"""batch: groups of ``batch_size`` consecutive examples, each group one row of lists."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from dagster_ds.features import concat_batches
from dagster_ds.streaming._arrow import (
    group_rows,
    group_runs,
    grouped_schema,
    rows_differ,
)
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import State, UnaryNode, field

_ROWS_PER_OUTPUT = 10_000  # input rows grouped per output batch (at least one group)


@dataclass(frozen=True, eq=False)
class BatchNode(UnaryNode):
    """Rows grouped ``batch_size`` at a time. State: ``{"child": position}`` (between groups)."""

    batch_size: int = 1
    drop_last_batch: bool = False

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        cursor = Cursor(self.child, field(state, "child", dict, "batch") if state else None)
        size = self.batch_size
        groups = max(1, _ROWS_PER_OUTPUT // size)
        while (rows := cursor.read(size * groups)) is not None:
            if self.drop_last_batch and rows.num_rows % size:
                rows = rows.slice(0, rows.num_rows - rows.num_rows % size)
            if rows.num_rows:
                yield group_rows(rows, size), {"child": cursor.position()}

    @property
    def schema(self) -> pa.Schema | None:
        schema = self.child.schema
        return grouped_schema(schema) if schema is not None else None


@dataclass(frozen=True, eq=False)
class RunBatchNode(UnaryNode):
    """Runs of consecutive rows with equal ``by_column`` values, each run one row of lists.

    State: ``{"child": position}`` at the start of the run being gathered, so a resume
    gathers it again from its first row.
    """

    by_column: tuple[str, ...] = ()

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        cursor = Cursor(self.child, field(state, "child", dict, "batch") if state else None)
        pending: list[pa.RecordBatch] = []
        pending_start = cursor.position()
        while True:
            before = cursor.position()
            chunk = cursor.take()
            if chunk is None:
                if pending:
                    yield group_runs(concat_batches(pending), [0]), {"child": cursor.position()}
                return
            starts = _run_starts(pending[-1] if pending else None, chunk, self.by_column)
            if not starts:
                pending.append(chunk)
                continue
            last = starts[-1]  # the start of the run still open at the chunk's end
            done = sum(piece.num_rows for piece in pending)
            rows = concat_batches([*pending, chunk.slice(0, last)])
            offsets = [0, *(done + start for start in starts[:-1] if done + start > 0)]
            pending_start = {**before, "skip": int(before.get("skip", 0)) + last}
            yield group_runs(rows, offsets), {"child": pending_start}
            pending = [chunk.slice(last)]

    @property
    def schema(self) -> pa.Schema | None:
        schema = self.child.schema
        return grouped_schema(schema) if schema is not None else None


def _run_starts(
    previous: pa.RecordBatch | None, chunk: pa.RecordBatch, names: tuple[str, ...]
) -> list[int]:
    """Positions in ``chunk`` where a new run starts (the first row too, if it differs)."""
    starts: list[int] = []
    if previous is not None and previous.num_rows and chunk.num_rows:
        last = previous.slice(previous.num_rows - 1)
        if rows_differ(last, chunk.slice(0, 1), names)[0]:
            starts.append(0)
    if chunk.num_rows > 1:
        changed = rows_differ(chunk.slice(0, chunk.num_rows - 1), chunk.slice(1), names)
        starts.extend(index + 1 for index, flag in enumerate(changed) if flag)
    return starts
