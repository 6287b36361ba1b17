# Conversions between users' Python objects and pyarrow's loosely typed API.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false, reportMissingTypeStubs=false
"""What a map function returns, turned into Arrow and merged into its input rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from dagster_ds.errors import TransformOutputError
from dagster_ds.streaming._arrow import columns_to_batch


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
    """The batch made from one output dict per example (None when every output is None)."""
    first = results[0] if results else None
    if type(first) is dict:  # the common case, checked at C speed
        same = first.keys()
        if all(type(result) is dict and result.keys() == same for result in results):
            return _columns(results, list(first), first_index)
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
    last = first_index + len(rows) - 1
    return columns_to_batch(columns, None, f"map returned, for examples {first_index} to {last},")


def merge(
    inputs: pa.RecordBatch,
    output: pa.RecordBatch | None,
    remove_columns: Sequence[str],
    where: str,
) -> pa.RecordBatch:
    """The input rows without ``remove_columns``, updated with the function's output columns."""
    removed = [name for name in remove_columns if name in inputs.schema.names]
    base = inputs.drop_columns(removed) if removed else inputs
    if output is None:
        return base
    if output.num_rows != base.num_rows:
        kept = [name for name in base.schema.names if name not in output.schema.names]
        if kept:
            raise TransformOutputError(
                f"map returned {output.num_rows} rows for {inputs.num_rows} input rows ({where}), "
                f"so input columns {kept} cannot be kept. Pass remove_columns={kept} (or "
                "dataset.column_names) to drop them, or return as many rows as you get."
            )
        return output
    arrays = list(base.columns)
    names = list(base.schema.names)
    for name, column in zip(output.schema.names, output.columns, strict=True):
        if name in names:
            arrays[names.index(name)] = column
        else:
            names.append(name)
            arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
