# pyarrow exposes untyped or loosely generic APIs: this module is where the streaming
# package touches them, so strict mode stays on everywhere else.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false, reportUnknownParameterType=false
# pyright: reportMissingTypeArgument=false, reportMissingTypeStubs=false
"""Arrow helpers the operators share: stable types, schemas, masks, IPC."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dagster_ds.errors import InvalidStateError, TransformOutputError
from dagster_ds.features import table_to_batch
from dagster_ds.formats import read_parquet_schema


class TypeKeeper:
    """Keeps a column's type from batch to batch when a later batch infers ``null``.

    Rows typed one batch at a time infer ``null`` for a column whose values are all
    None in that batch; casting it to the type seen before keeps the stream's schema
    stable (Parquet and concatenation need one schema).
    """

    def __init__(self) -> None:
        self._types: dict[str, pa.DataType] = {}

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with its ``null`` columns cast to the types seen before."""
        return cast_nulls(batch, self.schema(batch.schema))

    def schema(self, schema: pa.Schema) -> pa.Schema:
        """The schema `apply` gives a batch of ``schema`` (and the types it remembers)."""
        types = self._types
        kept: dict[str, pa.DataType] = {}
        for field in schema:
            if not pa.types.is_null(field.type):
                types[field.name] = field.type
            elif field.name in types:
                kept[field.name] = types[field.name]
        if not kept:
            return schema
        fields = [
            pa.field(f.name, kept[f.name]) if f.name in kept else pa.field(f.name, f.type)
            for f in schema
        ]
        return pa.schema(fields)


def cast_nulls(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the ``schema`` `TypeKeeper.schema` gave for it (its null columns typed)."""
    if schema is batch.schema or schema.equals(batch.schema, check_metadata=True):
        return batch
    arrays: list[pa.Array] = []
    for field, column in zip(schema, batch.columns, strict=True):
        if not column.type.equals(field.type):
            column = pa.nulls(len(column), field.type)  # pyright: ignore[reportCallIssue, reportArgumentType]
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def hstack(pieces: Sequence[pa.RecordBatch]) -> pa.RecordBatch:
    """Batches of equal length side by side, as one batch."""
    arrays: list[pa.Array] = []
    names: list[str] = []
    for piece in pieces:
        arrays.extend(piece.columns)
        names.extend(piece.schema.names)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def take(batch: pa.RecordBatch, positions: Sequence[int]) -> pa.RecordBatch:
    """The rows of ``batch`` at ``positions``, in that order."""
    return batch.take(pa.array(positions, pa.int64()))


def table_rows(
    table: pa.Table, indices: Any, start: int, stop: int, batch_size: int
) -> list[pa.RecordBatch]:
    """Rows ``start`` to ``stop`` of ``table`` (through ``indices`` when given), as batches."""
    if indices is None:
        return table.slice(start, max(stop - start, 0)).to_batches(max_chunksize=batch_size)
    return table.take(indices.slice(start, max(stop - start, 0))).to_batches(
        max_chunksize=batch_size
    )


def group_rows(batch: pa.RecordBatch, batch_size: int) -> pa.RecordBatch:
    """One row per ``batch_size`` rows of ``batch``: every column becomes a list column."""
    offsets = pa.array([*range(0, batch.num_rows, batch_size), batch.num_rows], pa.int32())
    arrays = [pa.ListArray.from_arrays(offsets, column) for column in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def rows_differ(left: pa.RecordBatch, right: pa.RecordBatch, names: tuple[str, ...]) -> list[bool]:
    """Row by row, whether ``left`` and ``right`` differ in any of the columns ``names``."""
    result = [False] * left.num_rows
    for name in names:
        a, b = left.column(name), right.column(name)
        equal = pc.equal(a, b)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        same: Any = pc.or_(pc.fill_null(equal, pa.scalar(False)), both_null)
        result = [
            flag or not bool(value) for flag, value in zip(result, same.to_pylist(), strict=True)
        ]
    return result


def group_runs(rows: pa.RecordBatch, starts: list[int]) -> pa.RecordBatch:
    """``rows`` grouped into one row of lists per run (runs begin at ``starts``)."""
    offsets = pa.array([*starts, rows.num_rows], pa.int32())
    arrays = [pa.ListArray.from_arrays(offsets, column) for column in rows.columns]
    return pa.RecordBatch.from_arrays(arrays, names=rows.schema.names)


def grouped_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of `group_rows`'s output."""
    return pa.schema([pa.field(field.name, pa.list_(field.type)) for field in schema])


def select_schema(schema: pa.Schema, names: Sequence[str]) -> pa.Schema | None:
    """Only the columns ``names`` of ``schema`` in that order (None if one is missing)."""
    if any(name not in schema.names for name in names):
        return None
    return pa.schema([schema.field(name) for name in names])


def rename_schema(schema: pa.Schema, mapping: Mapping[str, str]) -> pa.Schema:
    """``schema`` with columns renamed."""
    return pa.schema([field.with_name(mapping.get(field.name, field.name)) for field in schema])


def drop_schema(schema: pa.Schema, names: Sequence[str]) -> pa.Schema:
    """``schema`` without the columns ``names``."""
    return pa.schema([field for field in schema if field.name not in names])


def side_by_side_schema(schemas: Sequence[pa.Schema]) -> pa.Schema:
    """The columns of every schema, in order."""
    return pa.schema([field for schema in schemas for field in schema])


def parquet_schema(
    url: str, storage_options: Mapping[str, Any] | None, columns: Sequence[str] | None
) -> pa.Schema:
    """A Parquet file's schema, read from its footer (only ``columns`` when given)."""
    schema = read_parquet_schema(url, storage_options=storage_options)
    if columns is None:
        return schema
    kept = [schema.field(name) for name in columns if name in schema.names]
    return pa.schema(kept, metadata=schema.metadata)  # pyright: ignore[reportArgumentType]


def as_mask(result: Any, rows: int, where: str) -> pa.Array[Any]:
    """A batched filter's result as a boolean array of ``rows`` values."""
    try:
        if isinstance(result, pa.ChunkedArray):
            mask = result.combine_chunks()
        elif isinstance(result, pa.Array):
            mask = result
        else:
            mask = pa.array([bool(value) for value in result], pa.bool_())
    except TypeError as error:
        raise TransformOutputError(
            f"filter returned {type(result).__name__} for {where}; a batched filter must "
            "return one boolean per example (a list or an array)."
        ) from error
    if len(mask) != rows:
        raise TransformOutputError(
            f"filter returned {len(mask)} values for the {rows} {where}; return one "
            "boolean per example."
        )
    return mask if pa.types.is_boolean(mask.type) else mask.cast(pa.bool_())


def bool_array(values: Sequence[bool]) -> pa.Array[Any]:
    """A boolean Arrow array."""
    return pa.array(values, pa.bool_())


def to_base64_ipc(batch: pa.RecordBatch) -> str:
    """A batch as base64 text of an Arrow IPC stream (for JSON states)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")


def from_base64_ipc(text: str, where: str) -> pa.RecordBatch | None:
    """The batch `to_base64_ipc` wrote (None when it has no rows)."""
    try:
        data = base64.b64decode(text, validate=True)
        table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    except (ValueError, pa.ArrowInvalid) as error:
        raise InvalidStateError(
            f"{where}: the rows in the state_dict are not base64 Arrow IPC ({error}); pass a "
            "state_dict() saved from the same pipeline."
        ) from error
    return table_to_batch(table) if table.num_rows else None
