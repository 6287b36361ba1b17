# pyarrow's schema and to_pylist, and dict's unbound methods, are loosely typed here.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false
"""Per-example operators handing Python rows on, so a chain converts each batch once.

A per-example map or filter needs its batch as Python dicts anyway. When its consumer
is row-wise too (another per-example map or filter, or per-example iteration), it
hands on the rows it made, updated with its outputs, instead of the consumer calling
``to_pylist`` again. The rows handed on always equal ``arrow_of(batch).to_pylist()``
of the batch handed on:

- the user's function gets `LazyRow` examples of the batch, so its reads are seen
  for lineage as in a Dataset's map, and it types its outputs as the operator not
  handing rows on (a returned example's unread columns keep their Arrow values);
  with ``input_columns`` it gets the values only. Whatever it does to its examples
  never reaches the rows handed on;
- rows are handed on only when every column's Python values are immutable (numbers,
  strings, bytes, dates...), so the copies share no list or dict with them. The
  function's lazy rows then take the columns it reads from those rows (the Arrow
  batch of a deferred one is not built for it), and stop before they change;
- a map's new values are handed on as they are only when Arrow would give them back
  unchanged (`arrow_type`): every value of a column of one exact Python type that
  Arrow stores as it is (an int in int64's range, a float, a bool, a str, bytes) or
  None. Then the Arrow batches are not built at all unless a consumer asks for them
  (a `DeferredBatch`). Otherwise the outputs become Arrow at once, as they always did
  (converted, or refused with the usual error), and the new values are read back
  from there (`to_pylist` of the new columns only).
"""

from __future__ import annotations

import collections
import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from dagster_ds.features import column_features
from dagster_ds.formatting import FunctionCall, lazy_rows_of, returned_input
from dagster_ds.streaming._arrow import bool_array
from dagster_ds.streaming._node import Batch, DeferredBatch, Rows, arrow_of

_INT64 = (-(2**63), 2**63 - 1)
# Characters of a str (or bytes) column trusted to fit one Arrow array (4 bytes each).
_MAX_TEXT = 2**28


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
    batch: Batch, rows: Rows | None, hand_on: bool, call: FunctionCall, immutable: bool
) -> tuple[list[Any], Rows | None]:
    """The rows to pass to the function, and the rows to hand on (None: hand on none).

    The function gets `LazyRow` examples, whose reads are seen as in a Dataset's map
    or filter, and the rows handed on are plain dicts apart from them: ``rows`` if
    the child made them, else the call's formatter makes them (decoded values). When
    the batch's values are ``immutable`` (`immutable_values`) and there are Python
    rows (the child's, or those made to be handed on), the lazy rows take their
    columns from them: a chain of per-example operators never builds the Arrow
    batches between them for its functions. Call `detach_rows` on the rows given
    before the rows handed on change. With ``input_columns`` and rows handed on, the
    function gets their immutable values instead (its reads are those columns).
    """
    if hand_on and call.input_columns is not None:
        rows = _plain_rows(batch, rows, call)
        return rows, rows
    schema = batch.schema
    if immutable and len(set(schema.names)) == len(schema.names):
        if rows is None and hand_on:
            rows = call.formatter.rows(arrow_of(batch))
        if rows is not None:
            given = lazy_rows_of(rows, schema, lambda: arrow_of(batch))
            return given, rows if hand_on else None
    given = call.formatter.function_rows(arrow_of(batch))
    return given, _plain_rows(batch, rows, call) if hand_on else None


def _plain_rows(batch: Batch, rows: Rows | None, call: FunctionCall) -> Rows:
    """The batch's rows as dicts: ``rows`` if the child made them, else converted now."""
    return rows if rows is not None else call.formatter.rows(arrow_of(batch))


def arrow_type(values: list[Any]) -> pa.DataType | None:
    """The type ``pa.array(values)`` infers, when its ``to_pylist()`` equals ``values``.

    None when that is not certain without converting: values of several Python types
    (ints and floats become floats), of other types (numpy scalars, dates, lists...),
    ints out of int64's range, or strings UTF-8 cannot encode.
    """
    kinds = set(map(type, values))
    if type(None) in kinds:
        kinds.discard(type(None))
        values = [value for value in values if value is not None]
    if not kinds:
        return pa.null()
    if len(kinds) > 1:
        return None
    kind = kinds.pop()
    if kind is float:
        return pa.float64()
    if kind is int:
        return pa.int64() if _INT64[0] <= min(values) and max(values) <= _INT64[1] else None
    if kind is bool:
        return pa.bool_()
    if kind is str:
        text = "".join(values)
        if len(text) > _MAX_TEXT:
            return None
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return None
        return pa.string()
    if kind is bytes:
        return pa.binary() if sum(map(len, values)) <= _MAX_TEXT else None
    return None


def typed_columns(
    given: Rows, results: list[Any], remove_columns: Sequence[str]
) -> dict[str, tuple[list[Any], pa.DataType]] | None:
    """A per-example map's output columns with their Arrow types, known without Arrow.

    None when the outputs need Arrow to be checked or converted: results that are not
    all dicts with the same keys (or all None), or a column `arrow_type` cannot type.
    As `per_example_output`, returned input rows do not bring back ``remove_columns``.
    """
    first = results[0] if results else None
    if type(first) is not dict:
        return {} if not any(map(operator.is_not, results, itertools.repeat(None))) else None
    keys = list(first)
    if not keys or set(map(type, results)) != {dict} or any(type(k) is not str for k in keys):
        return None
    try:
        columns = {key: list(map(operator.itemgetter(key), results)) for key in keys}
    except KeyError:
        return None
    if sum(map(len, results)) != len(keys) * len(results):  # each has the keys, no others
        return None
    if remove_columns and returned_input(given, results):
        for name in remove_columns:
            columns.pop(name, None)
    typed: dict[str, tuple[list[Any], pa.DataType]] = {}
    for name, values in columns.items():
        kind = arrow_type(values)
        if kind is None:
            return None
        typed[name] = (values, kind)
    return typed


def mapped_rows(
    rows: Rows, names: Sequence[str], new_columns: Mapping[str, list[Any]], removed: Sequence[str]
) -> Rows | None:
    """``rows`` updated to a map's output batch of columns ``names`` (None when they cannot be).

    ``new_columns`` are the values of the columns the function returned, as the output
    batch's ``to_pylist`` gives them; ``removed`` the input columns dropped.
    """
    for name in removed:
        for row in rows:
            del row[name]
    for name, values in new_columns.items():
        collections.deque(map(dict.__setitem__, rows, itertools.repeat(name), values), maxlen=0)
    if rows and list(rows[0]) != list(names):
        return None
    return rows


def updated_rows(rows: Rows, names: Sequence[str], results: list[dict[str, Any]]) -> Rows | None:
    """``rows`` updated with a map's results (None when they cannot be this way).

    For results `typed_columns` accepted (dicts holding the values Arrow gives back,
    all with the same keys) when no input column is removed: ``rows[i].update(results[i])``
    is the row of the output batch (of columns ``names``) if at most one key is new, as
    `dict.update` adds new keys in each result's own order.
    """
    if not rows:
        return rows
    if sum(name not in rows[0] for name in results[0]) > 1:
        return None
    collections.deque(map(dict.update, rows, results), maxlen=0)
    return rows if list(rows[0]) == list(names) else None


def kept_rows(rows: Rows, mask: Sequence[bool]) -> Rows:
    """The rows a filter kept."""
    return list(itertools.compress(rows, mask))


def kept_batch(batch: Batch, mask: Sequence[bool], kept: int) -> Batch:
    """The rows of ``batch`` a filter kept (``kept`` of them), filtered only if asked for."""
    if kept == batch.num_rows:
        return batch
    return DeferredBatch(batch.schema, kept, lambda: arrow_of(batch).filter(bool_array(mask)))
