# Conversions between users' Python objects and pyarrow's loosely typed API.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false, reportMissingTypeStubs=false
"""Output formats: what examples, batches and function inputs look like.

Data stays in Arrow record batches through the pipeline; this module turns a batch
into Python dicts (``python``, one `to_pylist` per batch), numpy arrays, an Arrow
table, a pandas DataFrame, or torch tensors, only where a user or a function asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from dagster_ds.errors import UnknownFormatError

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
    """One output format type: ``python``, ``numpy``, ``arrow``, ``pandas`` or ``torch``."""

    type: str = "python"

    @classmethod
    def create(cls, type: str | None) -> Formatter:
        """The formatter for a format name or alias (None: python)."""
        if type not in _ALIASES:
            known = sorted(name for name in _ALIASES if name)
            raise UnknownFormatError(
                f"Unknown format type {type!r}; use None or one of {', '.join(known)}."
            )
        return cls(_ALIASES[type])

    @property
    def name(self) -> str | None:
        """The anchor's name for the format (None for python)."""
        return None if self.type == "python" else self.type

    def rows(self, batch: pa.RecordBatch) -> list[Any]:
        """Every row of ``batch`` in this format (a dict, a 1-row table or DataFrame)."""
        if self.type == "python":
            return batch.to_pylist()
        if self.type == "arrow":
            table = pa.Table.from_batches([batch])
            return [table.slice(index, 1) for index in range(batch.num_rows)]
        if self.type == "pandas":
            frame: Any = batch.to_pandas()
            return [frame.iloc[index : index + 1] for index in range(batch.num_rows)]
        columns = self.batch(batch)
        return [
            {name: values[index] for name, values in columns.items()}
            for index in range(batch.num_rows)
        ]

    def batch(self, batch: pa.RecordBatch) -> Any:
        """A batch in this format: a dict of columns, a table or a DataFrame."""
        if self.type == "python":
            return batch.to_pydict()
        if self.type == "arrow":
            return pa.Table.from_batches([batch])
        if self.type == "pandas":
            return batch.to_pandas()
        if self.type == "numpy":
            return {name: to_numpy(batch.column(name)) for name in batch.schema.names}
        return {name: to_torch(batch.column(name)) for name in batch.schema.names}


def to_numpy(column: pa.Array[Any]) -> Any:
    """A column as a numpy array; lists become a 2-D array when their lengths agree."""
    import numpy as np

    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        values = column.to_pylist()
        try:
            return np.array(values)
        except ValueError:
            return np.array([np.array(value) for value in values], dtype=object)
    return column.to_numpy(zero_copy_only=False)


def to_torch(column: pa.Array[Any]) -> Any:
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
