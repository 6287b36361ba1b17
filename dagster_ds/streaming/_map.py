"""map: a function applied to every example, or to batches of ``batch_size`` examples."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from dagster_ds.features import Features, cast_table
from dagster_ds.formatting._calls import EXAMPLES_PER_CALL, FunctionCall
from dagster_ds.formatting._feature_values import encode_results
from dagster_ds.formatting._outputs import function_output, merge, per_example_output
from dagster_ds.streaming._arrow import TypeKeeper
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import Rows, State, UnaryNode, field
from dagster_ds.streaming._rowwise import function_rows, mapped_rows


@dataclass(frozen=True, eq=False)
class MapNode(UnaryNode):
    """Rows updated by a function. State: ``{"child": position, "index": examples read}``.

    Per example, each input batch is turned into Python rows once (or taken from a
    per-example child, see `dagster_ds.streaming._rowwise`) and the outputs back into
    one Arrow batch. Batched, the input is regrouped into exactly ``batch_size`` rows
    (the last group may be smaller) whatever the input's batches, so the function sees
    the same batches after a resume.
    """

    call: FunctionCall | None = None
    batched: bool = False
    batch_size: int | None = 1000
    drop_last_batch: bool = False
    remove_columns: tuple[str, ...] = ()
    features: Features | None = None

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        for batch, _, checkpoint in self._run(state, hand_on=False):
            yield batch, checkpoint

    def row_batches(
        self, state: State | None
    ) -> Iterator[tuple[pa.RecordBatch, Rows | None, State]]:
        return self._run(state, hand_on=True)

    @property
    def _row_wise(self) -> bool:
        return self.call is not None and not self.batched and self.call.formatter.is_plain

    def _run(
        self, state: State | None, hand_on: bool
    ) -> Iterator[tuple[pa.RecordBatch, Rows | None, State]]:
        row_wise = self._row_wise
        position = field(state, "child", dict, "map") if state else None
        cursor = Cursor(self.child, position, rows=row_wise)
        index = field(state, "index", int, "map") if state else 0
        keeper = TypeKeeper()
        size = self.batch_size if self.batch_size is not None and self.batch_size > 0 else None
        hand_on = hand_on and row_wise and self.features is None
        while True:
            rows: Rows | None = None
            if self.batched:
                batch = cursor.read(size)
            else:
                batch, rows = cursor.take_rows(EXAMPLES_PER_CALL)
            if batch is None:
                return
            short = size is not None and batch.num_rows < size
            if self.batched and self.drop_last_batch and short:
                return
            returned: list[str] = []
            if row_wise:
                output, rows, returned = self._apply_rows(batch, rows, index, hand_on)
            else:
                output, rows = self._apply(batch, index), None
            index += batch.num_rows
            output = cast_table(output, self.features) if self.features else keeper.apply(output)
            if rows is not None:
                removed = [name for name in self.remove_columns if name in batch.schema.names]
                rows = mapped_rows(rows, output, returned, removed)
            yield output, rows, {"child": cursor.position(), "index": index}

    def _apply_rows(
        self, batch: pa.RecordBatch, rows: Rows | None, index: int, hand_on: bool
    ) -> tuple[pa.RecordBatch, Rows | None, list[str]]:
        """`_apply` per example on Python rows: the output, the rows to update, its columns."""
        assert self.call is not None
        given, kept = function_rows(batch, rows, hand_on, self.call.formatter.rows)
        results = self.call.each(given, index)
        encode_results(results, batch.schema)  # decoded values it returns, stored again
        where = f"examples {index} to {index + batch.num_rows - 1}"
        output = per_example_output(given, results, index, self.remove_columns, where)
        merged = merge(batch, output, self.remove_columns, where)
        assert isinstance(merged, pa.RecordBatch)
        return merged, kept, output.schema.names if output is not None else []

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
