"""A lazy column view: ``dataset["text"]`` reads values only when asked."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from dagster_ds.arrow._dataset import Dataset

_PREVIEW = 5


class Column(Sequence[Any]):
    """One column of a dataset, read lazily in the dataset's format.

    Indexing with an int, a slice or a list of ints reads only those rows;
    iterating reads batch by batch. Equal to any sequence with equal values.

    Example:
        >>> from dagster_ds import Dataset
        >>> column = Dataset.from_dict({"a": [1, 2, 3]})["a"]
        >>> column[1], column[:2], list(column) == [1, 2, 3]
        (2, [1, 2], True)
    """

    def __init__(self, dataset: Dataset, name: str) -> None:
        self._dataset = dataset
        self.column_name = name

    def __len__(self) -> int:
        return len(self._dataset)

    @overload
    def __getitem__(self, key: int) -> Any: ...
    @overload
    def __getitem__(self, key: slice | Sequence[int]) -> Any: ...
    def __getitem__(self, key: int | slice | Sequence[int]) -> Any:
        key = as_row_key(key)
        rows = self._dataset._read(key)  # pyright: ignore[reportPrivateUsage]
        output_format = self._dataset._output_format  # pyright: ignore[reportPrivateUsage]
        if isinstance(key, int):
            if output_format.transform is not None:  # it may need every column
                return output_format.row(rows)[self.column_name]
            return output_format.row(rows.select([self.column_name]))[self.column_name]
        return self._dataset._output_format.column(rows, self.column_name)  # pyright: ignore[reportPrivateUsage]

    def __iter__(self) -> Iterator[Any]:
        for table in self._dataset._iter_tables(1000):  # pyright: ignore[reportPrivateUsage]
            yield from self._dataset._output_format.column(table, self.column_name)  # pyright: ignore[reportPrivateUsage]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Column | list | tuple):
            return list(self) == list(other)  # pyright: ignore[reportUnknownArgumentType]
        return NotImplemented

    def __hash__(self) -> int:
        return hash((id(self._dataset), self.column_name))

    def __repr__(self) -> str:
        preview = list(self[:_PREVIEW])
        more = ", ..." if len(self) > _PREVIEW else ""
        return f"Column({repr(preview)[:-1]}{more}])"


def as_row_key(key: Any) -> Any:
    """``key`` with integer-likes (``np.int64(1)``, a 0-d array) as ``int``, as the anchor."""
    if isinstance(key, int | str | slice) or not hasattr(key, "__index__"):
        return key
    if getattr(key, "ndim", 0):  # a numpy array of positions
        return [int(position) for position in key]
    return operator.index(key)
