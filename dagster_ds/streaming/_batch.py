"""batch: groups of ``batch_size`` consecutive examples, each group one row of lists."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from dagster_ds.streaming._arrow import group_rows, grouped_schema
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
