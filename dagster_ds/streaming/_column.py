"""IterableColumn: one column of a stream, iterated on its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dagster_ds.streaming._base import StreamBase

if TYPE_CHECKING:
    from dagster_ds.streaming._dataset import IterableDataset


class IterableColumn:
    """The values of one column of an `IterableDataset` (``ds["text"]``), as a stream.

    Nested columns index further: ``ds["meta"]["source"]``.

    Example:
        >>> ds = IterableDataset.from_dict({"meta": [{"source": "web"}, {"source": "book"}]})
        >>> list(ds["meta"]["source"])
        ['web', 'book']
    """

    def __init__(self, source: IterableDataset | IterableColumn, column_name: str) -> None:
        self.source = source
        self.column_name = column_name

    def __iter__(self) -> Iterator[Any]:
        source, name = self.source, self.column_name
        if isinstance(source, StreamBase) and source._formatter.type == "python":  # pyright: ignore[reportPrivateUsage]
            for batch in source.select_columns([name])._record_batches():  # pyright: ignore[reportPrivateUsage]
                yield from batch.column(0).to_pylist()
            return
        for value in source:
            yield value[name]

    def __getitem__(self, column_name: str) -> IterableColumn:
        return IterableColumn(self, column_name)

    def __repr__(self) -> str:
        return f"IterableColumn({self.column_name!r})"
