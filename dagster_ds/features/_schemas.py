"""Schema unification: the schema several datasets' rows fit in, and batches made to fit it.

The kernel under concatenation and interleaving, map-style and streaming alike,
and under the function outputs `formatting` assembles.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from dagster_ds.errors import IncompatibleFeaturesError


def unify_schemas(schemas: Sequence[pa.Schema], what: str) -> pa.Schema:
    """The schema rows of all ``schemas`` fit in: columns in order of appearance.

    A column missing from some schemas, or of type ``null`` in some, is allowed (its
    values are None there, as in the anchor). Two different types for one column are
    an error that lists every such column.
    """
    fields: dict[str, pa.Field] = {}
    conflicts: dict[str, None] = {}
    for schema in schemas:
        for field in schema:
            known = fields.get(field.name)
            if known is None or pa.types.is_null(known.type):
                fields[field.name] = field
            elif not pa.types.is_null(field.type) and not known.type.equals(field.type):
                conflicts[field.name] = None
    if conflicts:
        details = "; ".join(
            f"{name!r} is " + ", ".join(_types_by_dataset(name, schemas)) for name in conflicts
        )
        raise IncompatibleFeaturesError(
            f"Cannot {what}: column types differ: {details}. Cast the datasets to the same "
            "features first (dataset.cast(...) or cast_column(...))."
        )
    metadata = schemas[0].metadata if schemas else None
    return pa.schema(list(fields.values()), metadata=metadata)  # pyright: ignore[reportArgumentType]


def _types_by_dataset(name: str, schemas: Sequence[pa.Schema]) -> list[str]:
    return [
        f"{schema.field(name).type} in dataset {position}"
        for position, schema in enumerate(schemas)
        if name in schema.names
    ]


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns: missing ones all None, ``null`` ones cast."""
    if batch.schema.equals(schema):
        return batch
    arrays: list[pa.Array] = []
    for field in schema:
        if field.name in batch.schema.names:
            column = batch.column(field.name)
            if not column.type.equals(field.type):
                column = column.cast(field.type)
            arrays.append(column)
        else:
            arrays.append(pa.nulls(batch.num_rows, field.type))  # pyright: ignore[reportCallIssue, reportArgumentType]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def concat_batches(pieces: Sequence[pa.RecordBatch]) -> pa.RecordBatch:
    """One batch from several; columns missing or all-null in some pieces are reconciled."""
    if len(pieces) == 1:
        return pieces[0]
    first = pieces[0].schema
    if all(piece.schema.equals(first) for piece in pieces):
        return pa.concat_batches(list(pieces))  # pyright: ignore[reportAttributeAccessIssue]
    tables = [pa.Table.from_batches([piece]) for piece in pieces]
    table = pa.concat_tables(tables, promote_options="permissive").combine_chunks()
    return table_to_batch(table)


def table_to_batch(table: pa.Table) -> pa.RecordBatch:
    """A table as one record batch (copying only when it has several chunks)."""
    batches = table.combine_chunks().to_batches()
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=table.schema)
    return batches[0]
