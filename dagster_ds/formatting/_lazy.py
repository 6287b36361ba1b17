# pyarrow is loosely typed: this module reads its columns.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false
"""The batch a batched function gets in the default format: columns made Python on first use.

As the anchor's ``LazyBatch``, the batch is a mutable mapping of column names to
Python lists, but a column is converted from Arrow (and its `Json`/`Image`/`Audio`
values decoded) only when the function reads it. What the function did to the batch
then decides the output: a column it never read nor set is still the input's own
Arrow array (no conversion back, and the cache stores only the changed columns); a
column it read may have been changed in place, so it is rebuilt from its list.

The batch also records which input columns the function read (`read_columns`): a
value read converts a column, a name lookup (``in``, ``keys()``, ``len``) does not.
Anything that reads every value (``items()``, ``values()``, ``dict(batch)``,
``{**batch}``, ``repr``, pickling) converts, and so records, every column.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from dagster_ds.features import Decoder, column_decoders

if TYPE_CHECKING:
    import pyarrow as pa


class _Unread:
    """Stands for a column not converted yet (one instance, `_UNREAD`)."""

    def __repr__(self) -> str:
        return "<unread>"


_UNREAD: Any = _Unread()


class LazyBatch(MutableMapping[str, Any]):
    """Columns of an Arrow batch as Python lists, each converted when first read.

    It behaves as the dict of lists the eager conversion gives (keys in column
    order, ``in``, ``len``, ``dict(batch)``, ``{**batch}``, ``batch | other``,
    ``repr``); reading a value converts that column only.

    Example:
        >>> import pyarrow as pa
        >>> batch = LazyBatch(pa.table({"a": [1, 2], "b": ["x", "y"]}))
        >>> batch["a"], batch.unread()
        ([1, 2], ['b'])
    """

    __slots__ = ("_data", "_decoders", "_reads", "_table")

    def __init__(
        self, table: pa.Table | pa.RecordBatch, decoders: Mapping[str, Decoder] | None = None
    ) -> None:
        self._table = table
        self._decoders = column_decoders(table.schema) if decoders is None else decoders
        self._data: dict[str, Any] = dict.fromkeys(table.schema.names, _UNREAD)
        # The input columns converted: shared with the copies, which read the same rows.
        self._reads: set[str] = set()

    # -- the mapping -----------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        if value is _UNREAD:
            value = self._data[key] = self._convert(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def clear(self) -> None:
        """Remove every column (none is converted)."""
        self._data.clear()

    def copy(self) -> LazyBatch:
        """A shallow copy: the same lists, the columns not read yet still unread."""
        return self._with(dict(self._data))

    __copy__ = copy

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self.items()),))  # pickled and deep-copied as the plain dict

    def __or__(self, other: Any) -> Any:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self._with({**self._data, **_plain(other)})

    def __ror__(self, other: Any) -> Any:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self._with({**_plain(other), **self._data})

    def __ior__(self, other: Any) -> LazyBatch:
        self._data.update(_plain(other))
        return self

    # -- what the function did ---------------------------------------------------

    def unread(self) -> list[str]:
        """The columns still holding the input's values untouched (never read nor set)."""
        return [name for name, value in self._data.items() if value is _UNREAD]

    def was_read_or_set(self, name: str) -> bool:
        """Whether column ``name`` is in the batch as a Python value (read, or set)."""
        return self._data.get(name, _UNREAD) is not _UNREAD

    def changed(self) -> dict[str, Any]:
        """The columns read or set (possibly changed), in the batch's order."""
        return {name: value for name, value in self._data.items() if value is not _UNREAD}

    def read_columns(self) -> frozenset[str]:
        """The input columns whose values were read, in this batch or any copy of it."""
        return frozenset(self._reads)

    def reads(self, other: LazyBatch) -> bool:
        """Whether this batch and ``other`` are over the same rows (one is a copy of the other)."""
        return self._table is other._table

    def deleted(self) -> list[str]:
        """The input's columns the function deleted from the batch."""
        return [name for name in self._table.schema.names if name not in self._data]

    # -- helpers ------------------------------------------------------------------

    def _convert(self, name: str) -> list[Any]:
        self._reads.add(name)
        values = self._table.column(name).to_pylist()
        decoder = self._decoders.get(name)
        return decoder(values) if decoder is not None else values

    def _with(self, data: dict[str, Any]) -> LazyBatch:
        twin = LazyBatch.__new__(LazyBatch)
        twin._table, twin._decoders, twin._data = self._table, self._decoders, data
        twin._reads = self._reads
        return twin


def _plain(other: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> Mapping[str, Any]:
    """``other``'s items with every value converted (another lazy batch's too)."""
    if isinstance(other, LazyBatch):
        return dict(other.items())
    return dict(other)
