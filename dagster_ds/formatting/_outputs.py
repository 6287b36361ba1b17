# Conversions between users' Python objects and pyarrow's loosely typed API.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false, reportMissingTypeStubs=false
"""What a map function returns, turned into Arrow and merged into its input rows.

One implementation for `Dataset.map` and `IterableDataset.map` (and for rows given
to `from_list`/`from_generator`-style constructors): dicts of columns, rows, tables,
DataFrames, numpy arrays and torch tensors all become Arrow record batches.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pyarrow as pa

from dagster_ds.errors import TransformOutputError
from dagster_ds.features import Features, concat_batches
from dagster_ds.formatting._calls import returned_input
from dagster_ds.formatting._feature_values import is_stored, stored_array, with_media_features
from dagster_ds.formatting._lazy import LazyBatch
from dagster_ds.formatting._lazy_row import LazyRow, returned_columns


def rows_to_batch(
    rows: Sequence[Mapping[str, Any]], features: Features | None, where: str
) -> pa.RecordBatch:
    """A batch from Python rows; a column missing from some rows is None there (as the anchor)."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    columns = {name: [row.get(name) for row in rows] for name in names}
    return columns_to_batch(columns, features, where)


def columns_to_batch(
    columns: Mapping[str, Any], features: Features | None, where: str
) -> pa.RecordBatch:
    """A batch from a dict of columns (lists or arrays), typed by ``features`` when given."""
    if features is not None:
        encoded = features.encode_batch(columns) if set(columns) == set(features) else columns
        try:
            return pa.RecordBatch.from_pydict(dict(encoded), schema=features.arrow_schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, KeyError) as error:
            raise TransformOutputError(
                f"{where}: the values do not fit the features {dict(features)}: {error}. "
                "Fix the values or the features."
            ) from error
    arrays: dict[str, Any] = {}
    for name, values in columns.items():
        try:
            arrays[str(name)] = values_to_array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as error:
            raise TransformOutputError(
                f"{where}: the values of column {name!r} do not fit one Arrow type: {error}. "
                "Give every value of a column the same type, or pass features=..."
            ) from error
        except OverflowError as error:  # an int beyond 64 bits
            raise TransformOutputError(
                f"{where}: a value of column {name!r} is an integer too large for 64 bits "
                f"({error}). Return a float or a string for it, or pass features=..."
            ) from error
    lengths = {name: len(values) for name, values in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise TransformOutputError(
            f"Column lengths mismatch: {where}: columns of unequal lengths {lengths}; every "
            "column of a batch must have the same number of values."
        )
    return pa.RecordBatch.from_pydict(arrays)


def values_to_array(values: Any) -> pa.Array[Any] | pa.ChunkedArray[Any]:
    """One column's values as Arrow: a list, a numpy array, a torch tensor, or a list of those.

    Arrays and tensors with more than one dimension become list columns (one row per
    first-axis entry), as the anchor stores them.
    """
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values
    if isinstance(values, list) and values and isinstance(values[0], MixedValue):
        return mixed_as_json(cast("list[Any]", values))
    if is_stored(values):  # a decoded input column (Json, Image): stored with its feature
        stored = stored_array(values)
        if stored is not None:
            return stored
        values = [item.value for item in values]
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        plain = _plain_values(values)
        if plain is None:
            raise
    return pa.array(plain)


class MixedValue:
    """One example's output value under ``on_mixed_types="use_json"``.

    Kept as is until its whole column is known: a column whose values mix types
    becomes JSON text (`Json`), any other column is stored as usual.
    """

    def __init__(self, value: Any) -> None:
        self.value = value


def mixed_as_json(values: list[Any]) -> Any:
    """``values`` as a `Json` array when they mix types (or are `MixedValue`), else an array."""
    plain = [value.value if isinstance(value, MixedValue) else value for value in values]
    try:
        return values_to_array(plain)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        texts = [None if v is None else json.dumps(v, separators=(",", ":")) for v in plain]
        return pa.ExtensionArray.from_storage(pa.json_(), pa.array(texts, pa.string()))


def _plain_values(values: Any) -> Any:
    """``values`` with numpy arrays and torch tensors in a form Arrow takes (None: no change).

    Their dtype is kept (a float32 tensor makes a float32 column, as the anchor): Arrow
    reads 1-D numpy arrays and numpy scalars with their type, so arrays of more
    dimensions become lists of 1-D arrays.
    """
    if _is_array_like(values):
        return _typed(_as_numpy(values))
    if isinstance(values, list | tuple) and any(_is_array_like(value) for value in values):
        return [_typed(_as_numpy(value)) if _is_array_like(value) else value for value in values]
    return None


def _typed(array: Any) -> Any:
    """A numpy array as Arrow takes it with its dtype: a scalar, a 1-D array, or a list."""
    if array.ndim == 0:
        return array[()]
    if array.ndim == 1 or array.dtype == object:
        return array
    return [_typed(row) for row in array]


def _is_array_like(value: Any) -> bool:
    return hasattr(value, "__array__") and not isinstance(value, str | bytes)


def _as_numpy(value: Any) -> Any:
    import numpy as np

    if hasattr(value, "detach"):  # a torch tensor, maybe on a GPU or requiring grad
        value = value.detach().cpu()
    return np.asarray(value)


def batch_output(result: Any, where: str) -> pa.RecordBatch | None:
    """The batch a batched function returned: a dict of columns, a table or a DataFrame."""
    if result is None:
        return None
    if isinstance(result, pa.RecordBatch):
        return result
    if isinstance(result, pa.Table):
        return result.combine_chunks().to_batches()[0] if result.num_rows else _empty(result)
    if isinstance(result, Mapping):
        columns: Mapping[str, Any] = result
        return columns_to_batch(columns, None, f"map returned, for {where},")
    if type(result).__name__ == "DataFrame":
        table = pa.Table.from_pandas(result, preserve_index=False)
        return table.combine_chunks().to_batches()[0] if table.num_rows else _empty(table)
    raise TransformOutputError(
        f"map returned {type(result).__name__} for {where}; a batched function must return "
        "a dict of columns (lists or arrays), a pyarrow Table or RecordBatch, a pandas "
        "DataFrame, or None."
    )


def _empty(table: pa.Table) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=table.schema)


def example_outputs(results: Sequence[Any], first_index: int) -> pa.RecordBatch | None:
    """The batch made from one output dict per example.

    None (no update) when every output is None, or an empty dict (nothing to add or
    change: the input rows, as the anchor).
    """
    first = results[0] if results else None
    if type(first) is dict:  # the common case, checked at C speed (no Python loop)
        keys = list(first)
        if not keys and not any(results):
            return None
        if set(map(type, results)) == {dict} and set(map(len, results)) == {len(keys)}:
            try:  # as many keys as the first and all of its keys: the same keys
                columns = {key: list(map(operator.itemgetter(key), results)) for key in keys}
            except KeyError:
                pass
            else:
                return _as_batch(columns, first_index, len(results))
    if all(result is None for result in results):
        return None
    keys: list[str] | None = None
    for position, result in enumerate(results):
        if result is None:
            raise TransformOutputError(
                f"map returned None for example {first_index + position} but a dict for other "
                "examples of the same batch; return a dict for every example (None, meaning no "
                "update, only works for all of them)."
            )
        if not isinstance(result, Mapping):
            raise TransformOutputError(
                f"map returned {type(result).__name__} ({_preview(result)}) for example "
                f"{first_index + position}; the function must return a dict of the columns to "
                "add or update, or None."
            )
        names = list(result)  # pyright: ignore[reportUnknownArgumentType]
        if keys is None:
            keys = names
        elif names != keys and set(names) != set(keys):
            raise TransformOutputError(
                f"map returned keys {sorted(names)} for example {first_index + position} but "
                f"{sorted(keys)} for example {first_index}; return the same keys for every example."
            )
    assert keys is not None
    return _columns(results, keys, first_index)


def _columns(
    rows: Sequence[Mapping[str, Any]], keys: list[str], first_index: int
) -> pa.RecordBatch:
    columns = {key: [row[key] for row in rows] for key in keys}
    return _as_batch(columns, first_index, len(rows))


def _as_batch(columns: dict[str, list[Any]], first_index: int, rows: int) -> pa.RecordBatch:
    last = first_index + rows - 1
    return columns_to_batch(columns, None, f"map returned, for examples {first_index} to {last},")


def merge(
    inputs: pa.RecordBatch | pa.Table,
    output: pa.RecordBatch | pa.Table | None,
    remove_columns: Sequence[str],
    where: str,
) -> pa.RecordBatch | pa.Table:
    """The input rows without ``remove_columns``, updated with the function's output columns.

    The result has the inputs' kind: a table for map-style datasets (whose reads may be
    chunked), a record batch for streams.
    """
    removed = [name for name in dict.fromkeys(remove_columns) if name in inputs.schema.names]
    base = inputs.drop_columns(removed) if removed else inputs
    if output is None:
        return base
    if output.num_rows != base.num_rows:
        kept = [name for name in base.schema.names if name not in output.schema.names]
        if kept:
            raise TransformOutputError(
                f"Column lengths mismatch: map returned {output.num_rows} rows for "
                f"{inputs.num_rows} input rows ({where}), "
                f"so input columns {kept} cannot be kept. Pass remove_columns={kept} (or "
                "dataset.column_names) to drop them, or return as many rows as you get."
            )
        if isinstance(inputs, pa.RecordBatch) or isinstance(output, pa.Table):
            return output
        return pa.Table.from_batches([output])
    if isinstance(base, pa.Table):
        table = base
        names = base.schema.names  # (``column_names`` costs more, for every batch)
        for name, column in zip(output.schema.names, output.columns, strict=True):
            if name in names:
                table = table.set_column(names.index(name), name, column)
            else:
                table = table.append_column(name, column)
                names.append(name)
        return table
    arrays = list(base.columns)
    names = list(base.schema.names)
    columns = (
        output.columns
        if isinstance(output, pa.RecordBatch)
        else [column.combine_chunks() for column in output.columns]
    )
    for name, column in zip(output.schema.names, columns, strict=True):
        if name in names:
            arrays[names.index(name)] = column
        else:
            names.append(name)
            arrays.append(column)
    merged = pa.RecordBatch.from_arrays(arrays, names=names)
    if isinstance(inputs, pa.RecordBatch):  # a stream's batch: its images still decode
        return with_media_features(merged, inputs, output.schema.names)
    return merged


def function_output(
    result: Any, formatted: Any, remove_columns: Sequence[str], where: str
) -> pa.RecordBatch | None:
    """A batched function's output; a returned input does not bring back removed columns.

    A returned `LazyBatch` gives only the columns it read or set: the others are the
    input's own arrays, which `merge` keeps as they are (zero-copy).
    """
    if isinstance(result, LazyBatch) and isinstance(formatted, LazyBatch):
        if not result.reads(formatted):  # kept from another batch: its columns are not ours
            return _without(batch_output(dict(result.items()), where), remove_columns)
        changed = result.changed()
        output = batch_output(changed, where) if changed else None
        return _without(output, remove_columns)
    output = batch_output(result, where)
    return _without(output, remove_columns) if result is formatted else output


def deleted_columns(formatted: Any, result: Any) -> list[str]:
    """The input columns the function deleted from its `LazyBatch` and so removed, as the anchor.

    Only when it returned a dict of columns (None leaves the rows as they were).
    """
    if isinstance(formatted, LazyBatch) and isinstance(result, Mapping):
        return formatted.deleted()
    return []


def per_example_output(
    rows: Sequence[Any],
    results: Sequence[Any],
    first_index: int,
    remove_columns: Sequence[str],
    where: str,
) -> pa.RecordBatch | None:
    """The outputs of a per-example function: dicts, or 1-row tables in table formats.

    As the anchor, a function that returned its (changed) input rows does not bring
    back the columns in ``remove_columns``; returned `LazyRow` inputs give only the
    columns read or set (`returned_columns`), any other `LazyRow` all its values.
    """
    changed = returned_columns(rows, results)
    if changed is not None:
        output = _as_batch(changed, first_index, len(results)) if changed else None
        return _without(output, remove_columns)
    if any(issubclass(kind, LazyRow) for kind in set(map(type, results))):  # or a ChangedRow
        results = [dict(r.items()) if isinstance(r, LazyRow) else r for r in results]
    if results and all(_is_table(result) for result in results):
        pieces = [batch_output(result, where) for result in results]
        output = concat_batches([piece for piece in pieces if piece is not None])
    else:
        output = example_outputs(results, first_index)
    return _without(output, remove_columns) if returned_input(rows, results) else output


def _without(output: pa.RecordBatch | None, names: Sequence[str]) -> pa.RecordBatch | None:
    if output is None:
        return None
    return output.drop_columns([name for name in names if name in output.schema.names])


def _is_table(value: Any) -> bool:
    return isinstance(value, pa.Table | pa.RecordBatch) or type(value).__name__ == "DataFrame"


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
