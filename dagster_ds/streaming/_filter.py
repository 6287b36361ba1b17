"""filter: keep the examples a function accepts, per example or in batches."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from dagster_ds.formatting._calls import EXAMPLES_PER_CALL, FunctionCall
from dagster_ds.streaming._arrow import as_mask, bool_array
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import State, UnaryNode, field


@dataclass(frozen=True, eq=False)
class FilterNode(UnaryNode):
    """The rows for which a function returns True. State: ``{"child": position, "index": n}``."""

    call: FunctionCall | None = None
    batched: bool = False
    batch_size: int | None = 1000

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        cursor = Cursor(self.child, field(state, "child", dict, "filter") if state else None)
        index = field(state, "index", int, "filter") if state else 0
        size = self.batch_size if self.batch_size is not None and self.batch_size > 0 else None
        while True:
            batch = cursor.read(size) if self.batched else cursor.take(EXAMPLES_PER_CALL)
            if batch is None:
                return
            kept = batch.filter(self._mask(batch, index)) if self.call is not None else batch
            index += batch.num_rows
            yield kept, {"child": cursor.position(), "index": index}

    def _mask(self, batch: pa.RecordBatch, index: int) -> Any:
        assert self.call is not None
        if not self.batched:
            _, results = self.call.per_example(batch, index)
            return bool_array([bool(result) for result in results])
        _, result = self.call.batched(batch, index)
        where = f"examples {index} to {index + batch.num_rows - 1}"
        return as_mask(result, batch.num_rows, where)
