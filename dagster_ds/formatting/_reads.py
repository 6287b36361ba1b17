"""What a map or filter function read of its input, as far as the engine can see it.

A read set is the input columns whose values the function read, or None when
the engine cannot tell, which counts as every column: a batch in a format other
than the default one (numpy, pandas, arrow, torch, a ``with_transform``). Be
sound first: None is always a safe answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

from dagster_ds.formatting._lazy import LazyBatch
from dagster_ds.formatting._lazy_row import read_columns

ReadSet: TypeAlias = frozenset[str] | None
"""Input column names whose values were read; None: every column (not observed)."""


def observed_reads(formatted: Any, input_columns: Sequence[str] | None) -> ReadSet:
    """The columns a function called on ``formatted`` read, once it has returned.

    ``input_columns``: the columns it was given by name (``input_columns=``): exactly
    those. Otherwise what its `LazyBatch` converted, or what its list of `LazyRow`
    examples read (a per-example function), or None for anything else.

    Example:
        >>> import pyarrow as pa
        >>> batch = LazyBatch(pa.table({"a": [1], "b": [2]}))
        >>> _ = batch["a"], "b" in batch
        >>> sorted(observed_reads(batch, None))
        ['a']
    """
    if input_columns is not None:
        return frozenset(input_columns)
    if isinstance(formatted, LazyBatch):
        return formatted.read_columns()
    if isinstance(formatted, list):
        return read_columns(formatted)  # pyright: ignore[reportUnknownArgumentType]
    return None


def union_reads(one: ReadSet, other: ReadSet) -> ReadSet:
    """Both read sets together (None, every column, absorbs the other)."""
    if one is None or other is None:
        return None
    return one | other
