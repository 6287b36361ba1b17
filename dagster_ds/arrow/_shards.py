"""Shards: the contiguous pieces a map-style dataset is made of, each with its own fingerprint.

A dataset read from files has one shard per group of small files (about
``shard_bytes`` of source each) or per big file (`dagster_ds.arrow._groups`); a
row-local transform (map, filter, cast, column operations) turns each shard
into one output shard, cached under ``rebase_transform(transform, shard
fingerprint)``, so appending a file costs one shard. A shard is a table
(memory-mapped from its cache entry) and, after a filter, the rows of that
table it keeps. Global transforms (shuffle, sort, select) leave the shards
alone and add a mapping over their concatenated rows.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pyarrow as pa
import xxhash

if TYPE_CHECKING:
    from dagster_ds.cache import CacheEntry


_Opened = TypeVar("_Opened", pa.Table, pa.Array)


class LazyTable(Generic[_Opened]):
    """A table (or a shard's kept positions) opened on first use, of known row count.

    A shard found in the cache need not be read until its rows are: a refresh
    whose transforms all hit never opens its inputs, and a driver never
    downloads the shards a cluster computed until the rows are asked for.
    """

    def __init__(self, num_rows: int, open_table: Callable[[], _Opened]) -> None:
        self.num_rows = num_rows
        self._open = open_table
        self._table: _Opened | None = None
        self._lock = threading.Lock()

    def get(self) -> _Opened:
        """The table, opened once."""
        if self._table is None:
            with self._lock:
                if self._table is None:
                    self._table = self._open()
        return self._table

    @contextlib.contextmanager
    def opened_for_now(self) -> Iterator[None]:
        """The table, if opened within the block and not before, dropped at its end.

        It opens again on next use: a pass over many shards holds one at a time.
        """
        was_open = self._table is not None
        try:
            yield
        finally:
            if not was_open:
                with self._lock:
                    self._table = None

    def __reduce__(self) -> tuple[Callable[[Any], LazyTable[Any]], tuple[Any]]:
        """Pickled as its rows (opened now): what opens them stays in this process."""
        return (_opened, (self.get(),))


def _opened(table: Any) -> LazyTable[Any]:
    lazy = LazyTable(len(table), lambda: table)
    lazy._table = table  # already open
    return lazy


#: A shard's rows: a table, or one opened on first use.
Rows = pa.Table | LazyTable[pa.Table]


@dataclass(frozen=True, eq=False)
class Shard:
    """One contiguous piece of a dataset.

    Attributes:
        fingerprint: Names the shard's rows (its cache key).
        rows: The table (memory-mapped from ``entries`` when cached), or a
            `LazyTable` that opens it on first use; `table` reads it.
        kept: The rows of ``table`` the shard holds, in order (None: all), or a
            `LazyTable` that reads them on first use; `indices` reads them.
        entries: The cache entries the shard's files live in, held open.
        table_entry: The entry whose whole table ``table`` is, if any: a stored
            dataset references it instead of copying the rows.
    """

    fingerprint: str
    rows: Rows
    kept: pa.Array | LazyTable[pa.Array] | None = None
    entries: tuple[CacheEntry, ...] = ()
    table_entry: CacheEntry | None = None

    @property
    def table(self) -> pa.Table:
        """The shard's table (before its indices), opened now if it was not yet."""
        return self.rows.get() if isinstance(self.rows, LazyTable) else self.rows

    @property
    def table_rows(self) -> int:
        """The rows of `table`, without opening it."""
        return self.rows.num_rows

    @property
    def indices(self) -> pa.Array | None:
        """The rows of `table` the shard holds, in order (None: all), read now if they were not."""
        return self.kept.get() if isinstance(self.kept, LazyTable) else self.kept

    @property
    def num_rows(self) -> int:
        """The rows the shard holds (after its indices, if any), without reading them."""
        if self.kept is None:
            return self.table_rows
        return self.kept.num_rows if isinstance(self.kept, LazyTable) else len(self.kept)

    @contextlib.contextmanager
    def opened_for_now(self) -> Iterator[None]:
        """The shard's rows, if opened within the block and not before, dropped at its end.

        See `LazyTable.opened_for_now`: a transform run shard after shard keeps none
        of its inputs' rows (on an object store, downloaded into memory) once done.

        Example:
            >>> shard = Shard("0" * 32, LazyTable(1, lambda: pa.table({"a": [1]})))
            >>> with shard.opened_for_now():
            ...     shard.read(0, 1).num_rows
            1
            >>> shard.rows._table is None
            True
        """
        with contextlib.ExitStack() as stack:
            for lazy in (self.rows, self.kept):
                if isinstance(lazy, LazyTable):
                    stack.enter_context(lazy.opened_for_now())
            yield

    def read(self, start: int, stop: int) -> pa.Table:
        """Rows ``start`` to ``stop`` of the shard (zero-copy without indices)."""
        if self.indices is None:
            return self.table.slice(start, max(stop - start, 0))
        return self.table.take(self.indices.slice(start, max(stop - start, 0)))


def shards_fingerprint(fingerprints: Sequence[str]) -> str:
    """The fingerprint of a dataset made of shards with these fingerprints, in order.

    A single shard's dataset has the shard's fingerprint.
    """
    if len(fingerprints) == 1:
        return fingerprints[0]
    digest = xxhash.xxh3_128(b"shards")
    for fingerprint in fingerprints:
        digest.update(b"\0" + fingerprint.encode())
    return digest.hexdigest()


def offsets(shards: Sequence[Shard]) -> list[int]:
    """The first logical row of each shard, and the total row count last."""
    starts = [0]
    for shard in shards:
        starts.append(starts[-1] + shard.num_rows)
    return starts


def concatenate(shards: Sequence[Shard], schema: pa.Schema) -> tuple[pa.Table, pa.Array | None]:
    """The shards' tables as one table (zero-copy), and the rows of it they hold (None: all)."""
    import pyarrow.compute as pc

    tables = [conform_table(shard.table, schema) for shard in shards]
    table = pa.concat_tables(tables) if len(tables) != 1 else tables[0]
    if all(shard.indices is None for shard in shards):
        return table, None
    pieces: list[pa.Array] = []
    start = 0
    for shard in shards:
        if shard.indices is None:
            pieces.append(pa.array(range(start, start + shard.table_rows), pa.uint64()))
        else:
            pieces.append(pc.add(shard.indices, pa.scalar(start, pa.uint64())))
        start += shard.table_rows
    physical = pa.concat_arrays(pieces) if pieces else pa.array([], pa.uint64())
    return table, physical


def conform_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns in its order (zero-copy where the types agree).

    A column the table lacks (a file without that key) is all null; one of
    another type (``null`` where other files have values) is cast.
    """
    if table.schema.equals(schema):
        return table
    columns: list[pa.ChunkedArray] = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.chunked_array([pa.nulls(table.num_rows, field.type)], field.type))
            continue
        column = table.column(field.name)
        columns.append(column if column.type.equals(field.type) else column.cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)
