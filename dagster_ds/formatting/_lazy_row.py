# pyarrow is loosely typed: this module reads its columns.
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false
# pyright: reportUnknownVariableType=false
"""The example a per-example function gets in the default format: values made Python on first read.

As the anchor's ``LazyRow``, the example is a mutable mapping of column names to
values, but a column of the batch the rows come from is converted from Arrow (and
its `Json`/`Image`/`Audio` values decoded) only when some row reads it, for every
row at once (`RowColumns`): a column no row reads is never converted.

The rows of a batch record together which input columns were read
(`read_columns`), as `LazyBatch` does: a value read records a column, a name
lookup (``in``, ``keys()``, ``len``) does not. Anything that reads every value
(``items()``, ``values()``, ``dict(row)``, ``{**row}``, ``==``, ``repr``,
pickling) reads, and so records, every column.

Lazy rows are objects the cyclic garbage collector tracks, one per example, where
the eager conversion's dicts of plain values are not tracked at all: a batch of
them alive across collections is promoted to the oldest generation, and full
collections then come every few batches (a third of a narrow per-example map's
CPU). A batch's rows live inside `older_generations_held`, so none is promoted.
"""

from __future__ import annotations

import contextlib
import gc
import operator
import threading
from collections.abc import (
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from itertools import repeat
from typing import TYPE_CHECKING, Any

from dagster_ds.features import column_decoders
from dagster_ds.formatting._lazy import _UNREAD  # pyright: ignore[reportPrivateUsage]

if TYPE_CHECKING:
    import pyarrow as pa


class RowColumns(dict[str, list[Any]]):
    """The columns of one Arrow batch as Python lists by name, each converted when first read.

    A row's read is one C-speed lookup here once its column is converted; the first
    read of a column (`__missing__`) converts it for every row and records it as read.

    ``table`` gives the batch (built when first called). ``rows``: the batch's rows
    already as Python dicts of immutable values, equal to its ``to_pylist()`` (no column
    to decode): a column is then taken from them (a C-speed pass) instead of from
    Arrow, until `detach` (the rows' owner is about to change them).
    """

    __slots__ = ("_decoders", "_rows", "_table", "names", "reads", "set_names")

    def __init__(
        self,
        table: Callable[[], pa.Table | pa.RecordBatch],
        schema: pa.Schema,
        rows: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        self._table = table
        self._rows = rows
        self._decoders = column_decoders(schema)
        #: The rows' keys, in column order (a row's own once it is changed).
        self.names: dict[str, Any] = dict.fromkeys(schema.names, _UNREAD)
        self.reads: set[str] = set()
        #: The keys set in some row (possibly deleted since).
        self.set_names: set[str] = set()

    def __missing__(self, name: str) -> list[Any]:
        """Column ``name``'s values (decoded), converted now and recorded as read."""
        if name not in self.names:
            raise KeyError(name)
        self.reads.add(name)
        if self._rows is not None:
            values = list(map(operator.itemgetter(name), self._rows))
        else:
            values = self._table().column(name).to_pylist()
            decoder = self._decoders.get(name)
            if decoder is not None:
                values = decoder(values)
        self[name] = values
        return values

    def detach(self) -> None:
        """Convert the columns not read yet from the Arrow batch from now on, not from the rows."""
        self._rows = None


class LazyRow(MutableMapping[str, Any]):
    """One example of an Arrow batch, its values converted when first read (`lazy_rows`).

    It behaves as the dict the eager conversion gives (keys in column order, ``in``,
    ``len``, ``get``, ``copy``, ``==`` with a dict, ``dict(row)``, ``{**row}``,
    ``row | other``, ``repr``, pickled as a dict). Until it is changed, a row holds
    no dict of its own (its batch's `RowColumns` has the values) and a read is two
    C-speed lookups; its first change gives it one and makes it a `ChangedRow`.

    Example:
        >>> import pyarrow as pa
        >>> row = lazy_rows(pa.table({"a": [1, 2], "b": ["x", "y"]}))[1]
        >>> row["a"], "b" in row, read_columns([row])
        (2, True, frozenset({'a'}))
    """

    __slots__ = ("_columns", "_data", "_index")

    _columns: RowColumns
    _index: int
    #: Set once the row is changed (a `ChangedRow`): its keys and values (`_UNREAD`: not read yet).
    _data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self._columns[key][self._index]

    def __setitem__(self, key: str, value: Any) -> None:
        columns = self._columns  # `_own`, inlined: the in-place idiom's first set in each row
        data = self._data = columns.names.copy()
        self.__class__ = ChangedRow  # pyright: ignore[reportAttributeAccessIssue]  # same slots
        data[key] = value
        columns.set_names.add(key)

    def __delitem__(self, key: str) -> None:
        del self._own()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __contains__(self, key: object) -> bool:
        return key in self._keys()

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def clear(self) -> None:
        """Remove every column (none is read)."""
        self._own().clear()

    def copy(self) -> LazyRow:
        """A shallow copy: the same values, the columns not read yet still unread."""
        return self._with(None)

    __copy__ = copy

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self.items()),))  # pickled and deep-copied as the plain dict

    def __or__(self, other: Any) -> Any:
        if not isinstance(other, Mapping):
            return NotImplemented
        values = _plain(other)
        self._columns.set_names.update(values)
        return self._with({**self._keys(), **values})

    def __ror__(self, other: Any) -> Any:
        if not isinstance(other, Mapping):
            return NotImplemented
        values = _plain(other)
        self._columns.set_names.update(values)
        return self._with({**values, **self._keys()})

    def __ior__(self, other: Any) -> LazyRow:
        self.update(other)
        return self

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set the columns of ``other`` (a mapping or key-value pairs) and ``kwargs``, as a dict's.

        One call for them all (the mixin's sets one key at a time); another lazy
        row's values are read whole.
        """
        values = {**_plain(other), **kwargs} if other else kwargs
        self._own().update(values)
        self._columns.set_names.update(values)

    # -- what the function did ---------------------------------------------------

    def was_read_or_set(self, name: str) -> bool:
        """Whether column ``name`` was set in this row, or read in any row of its batch."""
        return name in self._columns.reads and name in self._keys()

    def changed(self) -> list[str]:
        """The columns read (in any row of the batch) or set in this row, in the row's order."""
        return [name for name in self._keys() if self.was_read_or_set(name)]

    # -- helpers ------------------------------------------------------------------

    def _keys(self) -> dict[str, Any]:
        """The row's keys (as a dict's): its batch's columns until it is changed."""
        return self._columns.names

    def _own(self) -> dict[str, Any]:
        """The row's own dict, made on its first change (its values still unread)."""
        self._data = self._columns.names.copy()
        self.__class__ = ChangedRow  # pyright: ignore[reportAttributeAccessIssue]  # same slots
        return self._data

    def _with(self, data: dict[str, Any] | None) -> LazyRow:
        """A row of the same example: unchanged (None), or changed to ``data``."""
        if data is None:
            twin = LazyRow.__new__(LazyRow)
        else:
            twin = ChangedRow.__new__(ChangedRow)
            twin._data = data
        twin._columns, twin._index = self._columns, self._index
        return twin


class ChangedRow(LazyRow):
    """A `LazyRow` set or deleted in: its keys and values are its own dict's (`LazyRow._data`).

    Example:
        >>> import pyarrow as pa
        >>> row = lazy_rows(pa.table({"a": [1], "b": ["x"]}))[0]
        >>> row["c"] = 3
        >>> type(row).__name__, list(row), read_columns([row])
        ('ChangedRow', ['a', 'b', 'c'], frozenset())
    """

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        data = self._data
        value = data[key]
        if value is _UNREAD:
            value = data[key] = self._columns[key][self._index]
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value
        self._columns.set_names.add(key)

    def copy(self) -> LazyRow:
        """A shallow copy: the same values, the columns not read yet still unread."""
        return self._with(self._data.copy())

    __copy__ = copy

    def was_read_or_set(self, name: str) -> bool:
        """Whether column ``name`` was set in this row, or read in any row of its batch."""
        if self._data.get(name, _UNREAD) is not _UNREAD:
            return True
        return name in self._columns.reads and name in self._data

    def _keys(self) -> dict[str, Any]:
        return self._data

    def _own(self) -> dict[str, Any]:
        return self._data


def lazy_rows(table: pa.Table | pa.RecordBatch) -> list[LazyRow]:
    """Every row of ``table`` as a `LazyRow`, sharing its columns (converted once, when read)."""
    return _rows_of(RowColumns(lambda: table, table.schema), table.num_rows)


def lazy_rows_of(
    rows: list[dict[str, Any]],
    schema: pa.Schema,
    table: Callable[[], pa.Table | pa.RecordBatch],
) -> list[LazyRow]:
    """`lazy_rows` of the batch ``table()`` whose rows are already the Python ``rows``.

    ``rows`` must equal ``table().to_pylist()`` and hold immutable values only (a
    schema with no decoded column): a column read is taken from them, and the lazy
    rows never change them. Call `detach_rows` before changing ``rows``: a column
    read after that (by a row the function kept) comes from ``table()``.

    Example:
        >>> import pyarrow as pa
        >>> table = pa.table({"a": [1, 2], "b": ["x", "y"]})
        >>> row = lazy_rows_of(table.to_pylist(), table.schema, lambda: table)[1]
        >>> row["b"], read_columns([row])
        ('y', frozenset({'b'}))
    """
    return _rows_of(RowColumns(table, schema, rows), len(rows))


def detach_rows(rows: list[Any]) -> None:
    """Lazy ``rows`` of `lazy_rows_of` stop reading the Python rows they were made of."""
    if rows and isinstance(rows[0], LazyRow):
        rows[0]._columns.detach()  # pyright: ignore[reportPrivateUsage]


def _rows_of(columns: RowColumns, num_rows: int) -> list[LazyRow]:
    """``num_rows`` unchanged rows of ``columns``: two slots set each, no dict of their own."""
    rows: list[LazyRow] = []
    append = rows.append
    for index in range(num_rows):
        row = LazyRow()  # a type call costs less than LazyRow.__new__(LazyRow)
        row._columns, row._index = columns, index  # pyright: ignore[reportPrivateUsage]
        append(row)
    return rows


# `older_generations_held`: how many callers hold them, and the thresholds to restore.
_HOLD = threading.Lock()
_holders = 0
_restore: tuple[int, int, int] | None = None
# A generation-1 threshold never reached: no collection of the older generations.
_NEVER = 1 << 30
# The youngest generation's threshold while held: above a batch of rows (a thousand
# examples, `EXAMPLES_PER_CALL`), so rows made and freed by one batch never start a
# collection that would walk them; cyclic garbage is still collected this often.
_YOUNG = 5000


@contextlib.contextmanager
def older_generations_held() -> Generator[None]:
    """Collect only the youngest generation while one batch of `lazy_rows` is alive.

    The rows surviving a young collection stay in the middle generation until the
    batch is done and frees them, instead of being promoted on to the oldest one
    (whose collections walk every object of the process). The young collections
    come every 5,000 net allocations instead of 700, so a batch's rows, freed at
    its end, mostly never start one. Short-lived cyclic garbage the function makes
    is still collected; what survives a young collection waits for the batch's
    end. Nested and concurrent holds share one: the thresholds are restored when
    the last ends.

    Example:
        >>> import gc
        >>> import pyarrow as pa
        >>> before = gc.get_threshold()
        >>> with older_generations_held():
        ...     rows = lazy_rows(pa.table({"a": [1, 2]}))
        ...     total = sum(row["a"] for row in rows)
        ...     del rows
        >>> total, gc.get_threshold() == before
        (3, True)
    """
    global _holders, _restore
    with _HOLD:
        if _holders == 0:
            _restore = gc.get_threshold()
            gc.set_threshold(max(_restore[0], _YOUNG), _NEVER, _restore[2])
        _holders += 1
    try:
        yield
    finally:
        with _HOLD:
            _holders -= 1
            if _holders == 0 and _restore is not None:
                gc.set_threshold(*_restore)


def returned_columns(rows: Sequence[Any], results: Sequence[Any]) -> dict[str, list[Any]] | None:
    """The output columns when every result is its own input `LazyRow`, changed in place.

    The columns read (in any row) or set, as lists; the others still hold the input's
    values, which `merge` keeps as they are (not converted, nor recorded as read).
    None when the results are not all their input rows, or the rows' keys differ
    (then each result is taken as a dict of all its values).
    """
    if (
        not results
        or not isinstance(results[0], LazyRow)
        or len(rows) != len(results)
        or not all(map(operator.is_, rows, results))
    ):
        return None
    batch: RowColumns = results[0]._columns  # pyright: ignore[reportPrivateUsage]
    # C-speed passes over the rows (a batch of the in-place idiom changes every one).
    if list(map(type, results)).count(ChangedRow) == len(results):
        own: list[dict[str, Any]] = list(map(_DATA, results))
    else:
        own = [row._data for row in results if type(row) is ChangedRow]  # pyright: ignore[reportPrivateUsage]
    keys = list(own[0]) if own else list(batch.names)
    if len(own) != len(results) and keys != list(batch.names):
        return None
    if not all(map(keys.__eq__, map(list, own))):
        return None
    columns: dict[str, list[Any]] = {}
    for name in keys:
        if name in batch.set_names:
            values = list(map(operator.itemgetter(name), own)) if len(own) == len(results) else []
            if len(values) != len(results) or any(map(operator.is_, values, repeat(_UNREAD))):
                values = [row[name] for row in results]
            columns[name] = values
        elif name in batch.reads:
            columns[name] = batch[name]
    return columns


_DATA = operator.attrgetter("_data")


def read_columns(rows: list[Any]) -> frozenset[str] | None:
    """The input columns read of lazy ``rows`` (any of them, or a copy); None: not lazy rows."""
    if not rows:
        return frozenset()
    first = rows[0]
    if not isinstance(first, LazyRow):
        return None
    return frozenset(first._columns.reads)  # pyright: ignore[reportPrivateUsage]


def _plain(other: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> Mapping[str, Any]:
    """``other``'s items with every value converted (another lazy row's too)."""
    if isinstance(other, LazyRow):
        return dict(other.items())
    return dict(other)
