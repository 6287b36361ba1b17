"""filter: keep the examples a function accepts, per example or in batches."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from dagster_ds.features import SchemaMemo
from dagster_ds.formatting import (
    EXAMPLES_PER_CALL,
    FunctionCall,
    ReadSet,
    detach_rows,
    observed_reads,
    older_generations_held,
    union_reads,
)
from dagster_ds.streaming._arrow import as_mask, bool_array
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import Batch, Rows, State, UnaryNode, arrow_of
from dagster_ds.streaming._node import field as state_field
from dagster_ds.streaming._reads import ObservedReads
from dagster_ds.streaming._rowwise import (
    function_rows,
    immutable_values,
    kept_batch,
    kept_rows,
)


@dataclass(frozen=True, eq=False)
class FilterNode(UnaryNode):
    """The rows for which a function returns True. State: ``{"child": position, "index": n}``.

    Per example, the Python rows are taken from a per-example child when it made them
    and the kept ones handed on, the Arrow batch filtered only if asked for (see
    `dagster_ds.streaming._rowwise`).
    """

    call: FunctionCall | None = None
    batched: bool = False
    batch_size: int | None = 1000
    #: What the function read in complete passes (for lineage).
    observed: ObservedReads = field(default_factory=ObservedReads, compare=False)

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        for batch, _, checkpoint in self._run(state, hand_on=False):
            yield arrow_of(batch), checkpoint

    def row_batches(self, state: State | None) -> Iterator[tuple[Batch, Rows | None, State]]:
        return self._run(state, hand_on=True)

    def _run(
        self, state: State | None, hand_on: bool
    ) -> Iterator[tuple[Batch, Rows | None, State]]:
        call = self.call
        row_wise = call is not None and not self.batched and call.formatter.is_plain
        position = state_field(state, "child", dict, "filter") if state else None
        cursor = Cursor(self.child, position, rows=row_wise)
        index = state_field(state, "index", int, "filter") if state else 0
        reads: ReadSet = frozenset()
        size = self.batch_size if self.batch_size is not None and self.batch_size > 0 else None
        immutable = SchemaMemo(immutable_values)
        while True:
            rows: Rows | None = None
            if self.batched:
                batch = cursor.read(size)
            else:
                batch, rows = cursor.take_rows(EXAMPLES_PER_CALL)
            if batch is None:
                self.observed.record(reads, None)
                return
            kept: Batch
            if call is None:
                kept = batch
            elif row_wise:
                with older_generations_held():  # the lazy rows die inside
                    mask, rows, read = self._mask_rows(batch, rows, index, hand_on, immutable)
                reads = union_reads(reads, read)
                if rows is not None:
                    rows = kept_rows(rows, mask)
                    kept = kept_batch(batch, mask, len(rows))
                else:
                    kept = arrow_of(batch).filter(bool_array(mask))
            else:
                source = arrow_of(batch)
                mask, read = self._mask(source, index)
                kept, rows, reads = source.filter(mask), None, union_reads(reads, read)
            index += batch.num_rows
            yield kept, rows, {"child": cursor.position(), "index": index}

    def _mask_rows(
        self,
        batch: Batch,
        rows: Rows | None,
        index: int,
        hand_on: bool,
        immutable: SchemaMemo[bool],
    ) -> tuple[list[bool], Rows | None, ReadSet]:
        """Per example: the verdicts, the rows to hand on (None: none), what was read."""
        call = self.call
        assert call is not None
        values_immutable = immutable(batch.schema)
        given, rows = function_rows(
            batch, rows, hand_on and values_immutable, call, values_immutable
        )
        mask = list(map(bool, call.each(given, index)))
        detach_rows(given)  # the rows handed on are the next operator's to change
        return mask, rows, observed_reads(given, call.input_columns)

    def _mask(self, batch: pa.RecordBatch, index: int) -> tuple[Any, ReadSet]:
        """The rows of ``batch`` (from example ``index``) to keep, and what was read."""
        call = self.call
        assert call is not None
        if not self.batched:
            rows, results = call.per_example(batch, index)
            verdicts = bool_array([bool(result) for result in results])
            return verdicts, observed_reads(rows, call.input_columns)
        formatted, result = call.batched(batch, index)
        where = f"examples {index} to {index + batch.num_rows - 1}"
        return as_mask(result, batch.num_rows, where), observed_reads(formatted, call.input_columns)
