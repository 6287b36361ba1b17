"""Output formats: how rows, batches and columns are handed to users and functions.

Data stays in Arrow until this module turns a table into what the format
asks for: Python objects (the default), numpy arrays, an Arrow table, or a
pandas DataFrame.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import pyarrow as pa

from dagster_ds.errors import UnknownFormatError

_ALIASES = {
    None: "python",
    "python": "python",
    "numpy": "numpy",
    "np": "numpy",
    "arrow": "arrow",
    "pa": "arrow",
    "pyarrow": "arrow",
    "pandas": "pandas",
    "pd": "pandas",
}


@dataclass(frozen=True)
class OutputFormat:
    """What a dataset returns: the format type, the columns it covers, extra options."""

    type: str = "python"
    columns: tuple[str, ...] | None = None
    output_all_columns: bool = False
    kwargs: Mapping[str, Any] = field(default_factory=dict[str, Any])

    @classmethod
    def create(
        cls,
        type: str | None = None,
        columns: Sequence[str] | str | None = None,
        output_all_columns: bool = False,
        **kwargs: Any,
    ) -> OutputFormat:
        if type not in _ALIASES:
            known = sorted(name for name in _ALIASES if name)
            raise UnknownFormatError(f"Unknown format type {type!r}; use one of {known} or None.")
        if isinstance(columns, str):
            columns = [columns]
        return cls(
            _ALIASES[type],
            tuple(columns) if columns is not None else None,
            output_all_columns,
            kwargs,
        )

    def as_dict(self) -> dict[str, Any]:
        """The anchor's ``Dataset.format`` dictionary."""
        return {
            "type": None if self.type == "python" else self.type,
            "format_kwargs": dict(self.kwargs),
            "columns": list(self.columns) if self.columns is not None else None,
            "output_all_columns": self.output_all_columns,
        }

    def restricted_to(self, names: Sequence[str]) -> OutputFormat:
        """This format for a dataset with the columns ``names`` (others are forgotten)."""
        if self.columns is None:
            return self
        return replace(self, columns=tuple(name for name in self.columns if name in names))

    def _split(self, table: pa.Table) -> tuple[pa.Table, pa.Table | None]:
        if self.columns is None:
            return table, None
        formatted = table.select([c for c in self.columns if c in table.column_names])
        if not self.output_all_columns:
            return formatted, None
        rest = [c for c in table.column_names if c not in self.columns]
        return formatted, table.select(rest)

    def batch(self, table: pa.Table) -> Any:
        """A batch of rows in this format (a dict of columns for python and numpy)."""
        formatted, rest = self._split(table)
        result = _format_batch(formatted, self.type, self.kwargs)
        if rest is not None and rest.num_columns:
            if isinstance(result, dict):
                result.update(rest.to_pydict())
            elif self.type == "pandas":
                result = result.join(rest.to_pandas())
        return result

    def row(self, table: pa.Table) -> Any:
        """The only row of ``table`` in this format (a dict for python and numpy)."""
        if self.type in ("arrow", "pandas"):
            return self.batch(table)
        batch = self.batch(table)
        return {name: values[0] for name, values in batch.items()}

    def column(self, table: pa.Table, name: str) -> Any:
        """One column of ``table`` in this format."""
        if self.columns is not None and name not in self.columns and not self.output_all_columns:
            kind = "python"
        else:
            kind = self.type if self.columns is None or name in self.columns else "python"
        column = table.column(name)
        if kind == "arrow":
            return column
        if kind == "numpy":
            return _to_numpy(column)
        if kind == "pandas":
            return column.to_pandas()
        return column.to_pylist()


def _format_batch(table: pa.Table, kind: str, kwargs: Mapping[str, Any]) -> Any:
    if kind == "arrow":
        return table
    if kind == "pandas":
        return table.to_pandas(**kwargs)
    if kind == "numpy":
        return {name: _to_numpy(table.column(name)) for name in table.column_names}
    return table.to_pydict()


def _to_numpy(column: pa.ChunkedArray) -> Any:
    import numpy as np

    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return np.array(column.to_pylist())  # numpy strings (np.str_), as the anchor
    if pa.types.is_list(column.type) or pa.types.is_fixed_size_list(column.type):
        values = column.to_pylist()
        try:
            return np.array(values)
        except ValueError:
            return np.array([np.array(v) for v in values], dtype=object)
    return column.to_numpy()


_Method = TypeVar("_Method", bound=Callable[..., Any])


def transmit_format(method: _Method) -> _Method:
    """Give a transform's result (or each split of it) the format of its input, as the anchor.

    The result keeps its own fingerprint: a format only changes how rows are handed out.
    """

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        outputs = list(result.values()) if isinstance(result, dict) else [result]
        wanted: OutputFormat = self._output_format
        for output in outputs:
            if hasattr(output, "_output_format") and output is not self:
                output._output_format = wanted.restricted_to(output.column_names)
        return result

    return wrapper  # type: ignore[return-value]
