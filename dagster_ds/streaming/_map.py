"""map: a function applied to every example, or to batches of ``batch_size`` examples."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from dagster_ds.features import Features, cast_table
from dagster_ds.formatting._calls import EXAMPLES_PER_CALL, FunctionCall
from dagster_ds.formatting._outputs import function_output, merge, per_example_output
from dagster_ds.streaming._arrow import TypeKeeper
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import State, UnaryNode, field


@dataclass(frozen=True, eq=False)
class MapNode(UnaryNode):
    """Rows updated by a function. State: ``{"child": position, "index": examples read}``.

    Per example, each input batch is turned into Python rows once (`to_pylist`) and
    the outputs back into one Arrow batch. Batched, the input is regrouped into
    exactly ``batch_size`` rows (the last group may be smaller) whatever the input's
    batches, so the function sees the same batches after a resume.
    """

    call: FunctionCall | None = None
    batched: bool = False
    batch_size: int | None = 1000
    drop_last_batch: bool = False
    remove_columns: tuple[str, ...] = ()
    features: Features | None = None

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        cursor = Cursor(self.child, field(state, "child", dict, "map") if state else None)
        index = field(state, "index", int, "map") if state else 0
        keeper = TypeKeeper()
        size = self.batch_size if self.batch_size is not None and self.batch_size > 0 else None
        while True:
            batch = cursor.read(size) if self.batched else cursor.take(EXAMPLES_PER_CALL)
            if batch is None:
                return
            short = size is not None and batch.num_rows < size
            if self.batched and self.drop_last_batch and short:
                return
            output = self._apply(batch, index)
            index += batch.num_rows
            output = cast_table(output, self.features) if self.features else keeper.apply(output)
            yield output, {"child": cursor.position(), "index": index}

    def _apply(self, batch: pa.RecordBatch, index: int) -> pa.RecordBatch:
        where = f"examples {index} to {index + batch.num_rows - 1}"
        if self.call is None:
            output = None
        elif self.batched:
            formatted, result = self.call.batched(batch, index)
            output = function_output(result, formatted, self.remove_columns, where)
        else:
            rows, results = self.call.per_example(batch, index)
            output = per_example_output(rows, results, index, self.remove_columns, where)
        merged = merge(batch, output, self.remove_columns, where)
        assert isinstance(merged, pa.RecordBatch)
        return merged

    @property
    def schema(self) -> pa.Schema | None:
        return self.features.arrow_schema if self.features is not None else None
