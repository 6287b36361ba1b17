# pyarrow and numpy are loosely typed: this module is where formats touch them.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false, reportMissingTypeStubs=false
"""Output formats: how rows, batches and columns are handed to users and functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, TypeAlias

import pyarrow as pa

from dagster_ds.errors import UnknownFormatError
from dagster_ds.features import column_decoders
from dagster_ds.formatting._lazy import LazyBatch
from dagster_ds.formatting._lazy_row import lazy_rows

ArrowData: TypeAlias = pa.Table | pa.RecordBatch
"""A table (map-style datasets) or a record batch (streams): formatters take both."""

_ALIASES: dict[str | None, str] = {
    None: "python",
    "python": "python",
    "numpy": "numpy",
    "np": "numpy",
    "arrow": "arrow",
    "pa": "arrow",
    "pyarrow": "arrow",
    "pandas": "pandas",
    "pd": "pandas",
    "torch": "torch",
    "pt": "torch",
    "pytorch": "torch",
}


@dataclass(frozen=True)
class Formatter:
    """An output format: its type, the columns it covers, extra options.

    ``type`` is ``python`` (dicts of Python objects), ``numpy``, ``arrow``,
    ``pandas`` or ``torch``, or ``custom``: a ``transform`` applied to each batch
    (a dict of Python lists) when it is read, as the anchor's ``set_transform``.
    With ``columns``, only those columns are returned (formatted), unless
    ``output_all_columns`` also returns the others as Python objects. ``kwargs``
    go to the conversion (``to_pandas(**kwargs)``).
    """

    type: str = "python"
    columns: tuple[str, ...] | None = None
    output_all_columns: bool = False
    kwargs: Mapping[str, Any] = field(default_factory=dict[str, Any])
    transform: Callable[[dict[str, list[Any]]], Any] | None = None

    @classmethod
    def create(
        cls,
        type: str | None = None,
        columns: Sequence[str] | str | None = None,
        output_all_columns: bool = False,
        **kwargs: Any,
    ) -> Formatter:
        """The formatter for a format name or alias (None: python).

        ``"custom"`` with a ``transform`` keyword is `custom`'s format, so that
        ``set_format(**dataset.format)`` restores an on-the-fly transform, as the anchor
        (its ``format_kwargs`` entry is unpacked into the options).
        """
        kwargs = {**kwargs.pop("format_kwargs", {}), **kwargs}
        if type == "custom":
            return cls.custom(kwargs.pop("transform", None), columns, output_all_columns)
        if type not in _ALIASES:
            known = sorted(name for name in _ALIASES if name)
            raise UnknownFormatError(
                f"Unknown format type {type!r}; use None or one of {', '.join(known)} (or "
                "'custom' with transform=...)."
            )
        if isinstance(columns, str):
            columns = [columns]
        return cls(
            _ALIASES[type],
            tuple(columns) if columns is not None else None,
            output_all_columns,
            dict(kwargs),
        )

    @classmethod
    def custom(
        cls,
        transform: Callable[[dict[str, list[Any]]], Any] | None,
        columns: Sequence[str] | str | None = None,
        output_all_columns: bool = False,
    ) -> Formatter:
        """The format that applies ``transform`` on the fly (None: back to python)."""
        if transform is None:
            return cls.create(None, columns, output_all_columns)
        if isinstance(columns, str):
            columns = [columns]
        chosen = tuple(columns) if columns is not None else None
        return cls("custom", chosen, output_all_columns, {}, transform)

    @property
    def name(self) -> str | None:
        """The anchor's name for the format (None for python)."""
        return None if self.type == "python" else self.type

    def as_dict(self) -> dict[str, Any]:
        """The anchor's ``Dataset.format`` dictionary."""
        kwargs = {"transform": self.transform} if self.transform is not None else dict(self.kwargs)
        return {
            "type": self.name,
            "format_kwargs": kwargs,
            "columns": list(self.columns) if self.columns is not None else None,
            "output_all_columns": self.output_all_columns,
        }

    def restricted_to(self, names: Sequence[str]) -> Formatter:
        """This format for data with the columns ``names`` (others are forgotten)."""
        if self.columns is None:
            return self
        return replace(self, columns=tuple(name for name in self.columns if name in names))

    @property
    def is_plain(self) -> bool:
        """Whether this is the default format (Python objects, every column)."""
        return self.type == "python" and self.columns is None

    # -- conversions -----------------------------------------------------------

    @cached_property
    def _is_whole_table(self) -> bool:
        """Whether a batch in this format is every column as an Arrow table."""
        return self.type == "arrow" and self.columns is None

    def batch(self, data: ArrowData) -> Any:
        """A batch in this format: a dict of columns, a table or a DataFrame."""
        if self._is_whole_table:  # the common case of a stream of batches: no more Python
            return data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        formatted, rest = self._split(data)
        if self.transform is not None:
            result = self.transform(_decoded_pydict(formatted))
        else:
            result = _format_batch(formatted, self.type, self.kwargs)
        if rest is not None and rest.num_columns:
            if isinstance(result, dict):
                result.update(_decoded_pydict(rest))
            elif self.type == "pandas":
                result = result.join(rest.to_pandas())
        return result

    def function_batch(self, data: ArrowData) -> Any:
        """The batch a batched map or filter function gets: lazy in the default format.

        As the anchor, a function given the default (python) format gets a `LazyBatch`,
        whose columns become Python lists when read; any other format gets `batch`.
        """
        if self.is_plain and len(set(data.schema.names)) == data.num_columns:
            return LazyBatch(data)
        return self.batch(data)

    def function_rows(self, data: ArrowData) -> list[Any]:
        """The examples a per-example map or filter function gets: lazy in the default format.

        As the anchor, a function given the default (python) format gets `LazyRow`
        examples, whose columns become Python values when read; any other format gets
        `rows`.
        """
        if self.is_plain and len(set(data.schema.names)) == data.num_columns:
            return lazy_rows(data)
        return self.rows(data)

    def rows(self, data: ArrowData) -> list[Any]:
        """Every row of ``data`` in this format (a dict, or a 1-row table or DataFrame)."""
        if self.is_plain:
            decoders = column_decoders(data.schema)
            if not decoders:
                return data.to_pylist()
            columns = _decoded_pydict(data, decoders)
            names = list(columns)
            rows = zip(*columns.values(), strict=True)
            return [dict(zip(names, values, strict=True)) for values in rows]
        if self.type in ("arrow", "pandas", "custom"):
            return [self.row(data.slice(index, 1)) for index in range(data.num_rows)]
        columns = self.batch(data)
        return [
            {name: values[index] for name, values in columns.items()}
            for index in range(data.num_rows)
        ]

    def row(self, data: ArrowData) -> Any:
        """The only row of ``data`` in this format."""
        if self.type in ("arrow", "pandas"):
            return self.batch(data)
        return {name: values[0] for name, values in self.batch(data).items()}

    def column(self, data: ArrowData, name: str) -> Any:
        """One column of ``data`` in this format (Python objects if the format skips it)."""
        kind = self.type if self.columns is None or name in self.columns else "python"
        if kind == "custom":  # the transform may need every column, and may rename them
            return self.batch(data)[name]
        column = data.column(name)
        if kind == "arrow":
            return column
        decoder = column_decoders(data.schema).get(name)
        if decoder is not None:
            return _decoded_column(decoder(column.to_pylist()), kind, name)
        if kind == "numpy":
            return to_numpy(column)
        if kind == "torch":
            return to_torch(column)
        if kind == "pandas":
            return column.to_pandas(**self.kwargs)
        return column.to_pylist()

    def _split(self, data: ArrowData) -> tuple[pa.Table, pa.Table | None]:
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        if self.columns is None:
            return table, None
        formatted = table.select([name for name in self.columns if name in table.column_names])
        if not self.output_all_columns:
            return formatted, None
        rest = [name for name in table.column_names if name not in self.columns]
        return formatted, table.select(rest)


def _format_batch(table: pa.Table, kind: str, kwargs: Mapping[str, Any]) -> Any:
    if kind == "arrow":
        return table
    decoders = column_decoders(table.schema)
    if kind == "pandas":
        frame = table.to_pandas(**kwargs)
        for name, decoder in decoders.items():
            frame[name] = _decoded_column(decoder(table.column(name).to_pylist()), kind, name)
        return frame
    if kind in ("numpy", "torch"):
        convert = to_numpy if kind == "numpy" else to_torch
        return {
            name: _decoded_column(decoders[name](table.column(name).to_pylist()), kind, name)
            if name in decoders
            else convert(table.column(name))
            for name in table.column_names
        }
    return _decoded_pydict(table, decoders)


def _decoded_pydict(table: ArrowData, decoders: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``table.to_pydict()`` with feature values decoded (JSON text parsed, images opened)."""
    columns = table.to_pydict()
    for name, decoder in (column_decoders(table.schema) if decoders is None else decoders).items():
        if name in columns:
            columns[name] = decoder(columns[name])
    return columns


def _decoded_column(values: list[Any], kind: str, name: str) -> Any:
    """Decoded values in a format: images become arrays in numpy and torch, as the anchor."""
    if kind == "python" or kind == "custom":
        return values
    if kind == "pandas":
        import pandas as pd

        return pd.Series(values, name=name, dtype=object)
    import numpy as np

    arrays = [np.asarray(value) if _is_image(value) else value for value in values]
    stacked: Any
    try:
        stacked = np.stack(arrays) if arrays and all(_is_array(a) for a in arrays) else None
    except ValueError:  # images of different sizes
        stacked = None
    if stacked is None:
        stacked = np.empty(len(arrays), dtype=object)
        stacked[:] = arrays
    if kind == "torch":
        import torch

        if stacked.dtype != object:
            return torch.from_numpy(stacked)
        return [torch.from_numpy(a) if _is_array(a) else a for a in arrays]
    return stacked


def _is_image(value: Any) -> bool:
    from dagster_ds.features import is_pil_image

    return is_pil_image(value)


def _is_array(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "shape")


def to_numpy(column: pa.Array[Any] | pa.ChunkedArray[Any]) -> Any:
    """A column as a numpy array, as the anchor's numpy format gives it.

    Strings become numpy strings (``np.str_``); lists become a 2-D array when their
    lengths agree, else an object array of arrays.
    """
    import numpy as np

    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return np.array(column.to_pylist())
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        values = column.to_pylist()
        try:
            return np.array(values)
        except ValueError:
            return np.array([np.array(value) for value in values], dtype=object)
    return column.to_numpy(zero_copy_only=False)


def to_torch(column: pa.Array[Any] | pa.ChunkedArray[Any]) -> Any:
    """A column as a torch tensor; strings (and ragged lists) stay Python lists."""
    import numpy as np
    import torch

    array = to_numpy(column)
    if array.dtype == object or array.dtype.kind in "USO":
        return [
            torch.as_tensor(value) if isinstance(value, np.ndarray) else value
            for value in array.tolist()
        ]
    return torch.tensor(array)
