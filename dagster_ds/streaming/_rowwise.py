# pyarrow's schema and to_pylist, and dict's unbound methods, are loosely typed here.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false
"""Per-example operators handing Python rows on, so a chain converts each batch once.

A per-example map or filter needs its batch as Python dicts anyway. When its consumer
is row-wise too (another per-example map or filter, or per-example iteration), it
hands on the rows it made, updated with its outputs, instead of the consumer calling
``to_pylist`` again. The rows handed on always equal ``batch.to_pylist()`` of the
batch handed on:

- the user's function gets shallow copies, so whatever it does to its dicts never
  reaches the rows handed on;
- rows are handed on only when every column's Python values are immutable (numbers,
  strings, bytes, dates...), so the copies share no list or dict with them;
- a map's new values are read back from its Arrow output (`to_pylist` of the new
  columns only), so they are exactly what a fresh conversion would give.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Sequence

import pyarrow as pa

from dagster_ds.features._decode import column_features
from dagster_ds.streaming._node import Rows


def immutable_values(schema: pa.Schema) -> bool:
    """Whether every column's Python values (``to_pylist``) are immutable objects.

    Columns whose values are decoded when read (`Json`, `Image`, `Audio`) never are.
    """
    return all(_immutable_type(field.type) for field in schema) and not column_features(schema)


def _immutable_type(arrow_type: pa.DataType) -> bool:
    types = pa.types
    return (
        types.is_integer(arrow_type)
        or types.is_floating(arrow_type)
        or types.is_boolean(arrow_type)
        or types.is_null(arrow_type)
        or types.is_string(arrow_type)
        or types.is_large_string(arrow_type)
        or types.is_binary(arrow_type)
        or types.is_large_binary(arrow_type)
        or types.is_fixed_size_binary(arrow_type)
        or types.is_decimal(arrow_type)
        or types.is_temporal(arrow_type)
    ) and not isinstance(arrow_type, pa.BaseExtensionType)


def function_rows(
    batch: pa.RecordBatch,
    rows: Rows | None,
    hand_on: bool,
    convert: Callable[[pa.RecordBatch], Rows],
) -> tuple[Rows, Rows | None]:
    """The rows to pass to the function, and the rows to hand on (None: hand on none).

    ``rows`` are the batch's rows if the child made them, else ``convert(batch)``
    makes them (the formatter's rows: decoded values). Without ``hand_on`` the
    function gets them themselves, as a fresh conversion.
    """
    if rows is None:
        rows = convert(batch)
    if not hand_on:
        return rows, None
    return list(map(dict.copy, rows)), rows


def mapped_rows(
    rows: Rows, output: pa.RecordBatch, new_columns: Sequence[str], removed: Sequence[str]
) -> Rows | None:
    """``rows`` updated to the map's ``output`` batch (None when they cannot be).

    ``new_columns`` are the columns the function returned (read back from ``output``),
    ``removed`` the input columns dropped.
    """
    if output.num_rows != len(rows) or not immutable_values(output.schema):
        return None
    for name in removed:
        for row in rows:
            del row[name]
    for name in new_columns:
        values = output.column(name).to_pylist()
        collections.deque(map(dict.__setitem__, rows, itertools.repeat(name), values), maxlen=0)
    if rows and list(rows[0]) != output.schema.names:
        return None
    return rows


def kept_rows(rows: Rows, mask: Sequence[bool]) -> Rows:
    """The rows a filter kept."""
    return list(itertools.compress(rows, mask))
