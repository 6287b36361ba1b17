"""map: a function applied to every example, or to batches of ``batch_size`` examples."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from dagster_ds.features import Features, cast_table
from dagster_ds.streaming._arrow import TypeKeeper, concat_batches
from dagster_ds.streaming._calls import EXAMPLES_PER_CALL, FunctionCall, returned_input
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import State, UnaryNode, field
from dagster_ds.streaming._outputs import batch_output, example_outputs, merge


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
            return merge(batch, None, self.remove_columns, where)
        if self.batched:
            formatted, result = self.call.batched(batch, index)
            output = batch_output(result, where)
            identity = result is formatted
        else:
            rows, results = self.call.per_example(batch, index)
            output = _example_outputs(results, index, where)
            identity = returned_input(rows, results)
        if identity and output is not None:
            output = output.drop_columns(
                [name for name in self.remove_columns if name in output.schema.names]
            )
        return merge(batch, output, self.remove_columns, where)

    @property
    def schema(self) -> pa.Schema | None:
        return self.features.arrow_schema if self.features is not None else None


def _example_outputs(results: Sequence[Any], index: int, where: str) -> pa.RecordBatch | None:
    """Outputs of a per-example function: dicts, or 1-row tables when the format is a table."""
    if results and all(_is_table(result) for result in results):
        pieces = [batch_output(result, where) for result in results]
        return concat_batches([piece for piece in pieces if piece is not None])
    return example_outputs(results, index)


def _is_table(value: Any) -> bool:
    return isinstance(value, pa.Table | pa.RecordBatch) or type(value).__name__ == "DataFrame"
