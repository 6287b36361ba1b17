"""map: a function applied to every example, or to batches of ``batch_size`` examples."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from dagster_ds.features import Features, SchemaMemo, cast_table
from dagster_ds.formatting import (
    EXAMPLES_PER_CALL,
    FunctionCall,
    ReadSet,
    detach_rows,
    encode_results,
    function_output,
    merge,
    observed_reads,
    older_generations_held,
    per_example_output,
    union_reads,
    values_to_array,
)
from dagster_ds.streaming._arrow import TypeKeeper, cast_nulls
from dagster_ds.streaming._cursor import Cursor
from dagster_ds.streaming._node import (
    Batch,
    DeferredBatch,
    Rows,
    State,
    UnaryNode,
    arrow_of,
)
from dagster_ds.streaming._node import field as state_field
from dagster_ds.streaming._reads import ObservedReads
from dagster_ds.streaming._rowwise import (
    function_rows,
    immutable_values,
    mapped_rows,
    typed_columns,
    updated_rows,
)


@dataclass(frozen=True, eq=False)
class MapNode(UnaryNode):
    """Rows updated by a function. State: ``{"child": position, "index": examples read}``.

    Per example, the function gets lazy rows of each input batch (a column becomes
    Python when first read, and the reads are recorded for lineage); the rows handed
    on are converted once or taken from a per-example child (see
    `dagster_ds.streaming._rowwise`), and the outputs become one Arrow batch (only
    when needed, when the rows are handed on). Batched, the input
    is regrouped into exactly ``batch_size`` rows (the last group may be smaller)
    whatever the input's batches, so the function sees the same batches after a resume.
    """

    call: FunctionCall | None = None
    batched: bool = False
    batch_size: int | None = 1000
    drop_last_batch: bool = False
    remove_columns: tuple[str, ...] = ()
    features: Features | None = None
    #: What the function read in complete passes, and the output's columns (for lineage).
    observed: ObservedReads = field(default_factory=ObservedReads, compare=False)

    def batches(self, state: State | None) -> Iterator[tuple[pa.RecordBatch, State]]:
        for batch, _, checkpoint in self._run(state, hand_on=False):
            yield arrow_of(batch), checkpoint

    def row_batches(self, state: State | None) -> Iterator[tuple[Batch, Rows | None, State]]:
        return self._run(state, hand_on=True)

    @property
    def _row_wise(self) -> bool:
        return self.call is not None and not self.batched and self.call.formatter.is_plain

    def _run(
        self, state: State | None, hand_on: bool
    ) -> Iterator[tuple[Batch, Rows | None, State]]:
        row_wise = self._row_wise
        position = state_field(state, "child", dict, "map") if state else None
        cursor = Cursor(self.child, position, rows=row_wise)
        index = state_field(state, "index", int, "map") if state else 0
        reads: ReadSet = frozenset()
        columns: list[str] | None = None
        outputs = _Outputs(self.remove_columns, self.features)
        size = self.batch_size if self.batch_size is not None and self.batch_size > 0 else None
        hand_on = hand_on and row_wise and self.features is None
        while True:
            rows: Rows | None = None
            if self.batched:
                batch = cursor.read(size)
            else:
                batch, rows = cursor.take_rows(EXAMPLES_PER_CALL)
            if batch is None:
                self.observed.record(reads, columns)
                return
            short = size is not None and batch.num_rows < size
            if self.batched and self.drop_last_batch and short:
                self.observed.record(reads, columns)
                return
            if row_wise:
                output, rows, read = self._apply_rows(batch, rows, index, hand_on, outputs)
            else:
                merged, read = self._apply(arrow_of(batch), index)
                output, rows = outputs.typed(merged), None
            reads, columns = union_reads(reads, read), output.schema.names
            index += batch.num_rows
            yield output, rows, {"child": cursor.position(), "index": index}

    def _apply_rows(
        self, batch: Batch, rows: Rows | None, index: int, hand_on: bool, outputs: _Outputs
    ) -> tuple[Batch, Rows | None, ReadSet]:
        """`_apply` per example on Python rows: the output, the rows handed on, the reads."""
        assert self.call is not None
        with older_generations_held():  # the lazy rows die inside: see `older_generations_held`
            return self._apply_given(batch, rows, index, hand_on, outputs)

    def _apply_given(
        self, batch: Batch, rows: Rows | None, index: int, hand_on: bool, outputs: _Outputs
    ) -> tuple[Batch, Rows | None, ReadSet]:
        assert self.call is not None
        immutable = outputs.immutable(batch.schema)
        given, kept = function_rows(batch, rows, hand_on, self.call, immutable)
        results = self.call.each(given, index)
        detach_rows(given)  # the rows handed on change below
        read = observed_reads(given, self.call.input_columns)
        if kept is not None and immutable:  # no decoded input column
            columns = typed_columns(given, results, self.remove_columns)
            if columns is not None:
                lazy = outputs.lazy(batch, columns)
                if lazy is not None:
                    new_columns = {name: values for name, (values, _) in columns.items()}
                    rows = outputs.rows(kept, batch, lazy.schema, new_columns, results)
                    return lazy, rows, read
        source = arrow_of(batch)
        encode_results(results, source.schema)  # decoded values it returns, stored again
        where = f"examples {index} to {index + batch.num_rows - 1}"
        output = per_example_output(given, results, index, self.remove_columns, where)
        merged = merge(source, output, self.remove_columns, where)
        assert isinstance(merged, pa.RecordBatch)
        merged = outputs.typed(merged)
        if kept is None or merged.num_rows != len(kept):
            return merged, None, read
        returned = output.schema.names if output is not None else []
        new_columns: dict[str, list[Any]] = {
            name: merged.column(name).to_pylist() for name in returned
        }
        return merged, outputs.rows(kept, batch, merged.schema, new_columns), read

    def _apply(self, batch: pa.RecordBatch, index: int) -> tuple[pa.RecordBatch, ReadSet]:
        """The output of the rows ``batch`` (from example ``index``), and what was read."""
        where = f"examples {index} to {index + batch.num_rows - 1}"
        read: ReadSet = frozenset()
        if self.call is None:
            output = None
        elif self.batched:
            formatted, result = self.call.batched(batch, index)
            read = observed_reads(formatted, self.call.input_columns)
            output = function_output(result, formatted, self.remove_columns, where)
        else:
            rows, results = self.call.per_example(batch, index)
            read = observed_reads(rows, self.call.input_columns)
            output = per_example_output(rows, results, index, self.remove_columns, where)
        merged = merge(batch, output, self.remove_columns, where)
        assert isinstance(merged, pa.RecordBatch)
        return merged, read

    @property
    def schema(self) -> pa.Schema | None:
        return self.features.arrow_schema if self.features is not None else None


class _Outputs:
    """A map's output batches during one iteration: typed alike from batch to batch."""

    def __init__(self, remove_columns: Sequence[str], features: Features | None) -> None:
        self._remove_columns = remove_columns
        self._features = features
        self._keeper = TypeKeeper()
        #: Of the input batches' schema (one memo each: input and output schemas alternate).
        self.immutable = SchemaMemo(immutable_values)
        self._immutable_output = SchemaMemo(immutable_values)
        self._merged: tuple[pa.Schema, pa.Schema, pa.Schema] | None = None

    def typed(self, merged: pa.RecordBatch) -> pa.RecordBatch:
        """An output batch cast to the features, or with the types of earlier batches."""
        if self._features is not None:
            return cast_table(merged, self._features)
        return self._keeper.apply(merged)

    def lazy(
        self, batch: Batch, columns: dict[str, tuple[list[Any], pa.DataType]]
    ) -> DeferredBatch | None:
        """The output batch, built from ``columns`` only if asked for (None: build it now).

        Its schema is the one the built batch has: `merge`'s for these column types,
        then the types of earlier batches (the batch is typed in order, here).
        """
        fields = pa.schema([(name, kind) for name, (_, kind) in columns.items()])
        merged = self._merged_schema(batch.schema, fields)
        if not merged.names:  # merge of no columns: let Arrow say what it makes of it
            return None
        schema = self._keeper.schema(merged)
        remove_columns = self._remove_columns

        def build() -> pa.RecordBatch:
            arrays = {name: values_to_array(values) for name, (values, _) in columns.items()}
            output = pa.RecordBatch.from_pydict(arrays) if arrays else None
            result = merge(arrow_of(batch), output, remove_columns, "a per-example map")
            assert isinstance(result, pa.RecordBatch)
            return cast_nulls(result, schema)

        return DeferredBatch(schema, batch.num_rows, build)

    def rows(
        self,
        kept: Rows,
        batch: Batch,
        schema: pa.Schema,
        new_columns: dict[str, list[Any]],
        results: list[Any] | None = None,
    ) -> Rows | None:
        """The rows handed on with an output of ``schema``, or None when they cannot be.

        ``results`` are the function's results when `typed_columns` accepted them.
        """
        if not self._immutable_output(schema):
            return None
        removed = [name for name in self._remove_columns if name in batch.schema.names]
        if results is not None and new_columns and not removed:
            rows = updated_rows(kept, schema.names, results)
            if rows is not None:
                return rows
        return mapped_rows(kept, schema.names, new_columns, removed)

    def _merged_schema(self, schema: pa.Schema, fields: pa.Schema) -> pa.Schema:
        """The schema `merge` gives inputs of ``schema`` and outputs of ``fields``."""
        last = self._merged
        if (
            last is not None
            and last[1].equals(fields)
            and last[0].equals(schema, check_metadata=True)
        ):
            return last[2]
        inputs = pa.RecordBatch.from_pylist([], schema=schema)
        output = pa.RecordBatch.from_pylist([], schema=fields) if fields.names else None
        merged = merge(inputs, output, self._remove_columns, "a per-example map").schema
        self._merged = (schema, fields, merged)
        return merged
