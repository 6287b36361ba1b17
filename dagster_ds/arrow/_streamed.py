"""A stored shard's rows a batch at a time, as its table holds them, in bounded memory.

`open_table_shard` reads an entry's table whole: its data files, joined with the
columns it keeps of its base entry, cast to its features. On an object store that
is a download held in memory for as long as the table is (locally, a memory map
whose touched pages stay resident). A pass over a shard no one has opened yet
needs its rows once, in order: hashing a stored version's content fingerprint
(`stored_batches`), a map over it (`streamed_rows`), hashing the columns a map
read (`shard_batches`). Each gets the same rows a record batch at a time, so the
pass holds a few batches, whatever the shard's size.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from dagster_ds.arrow._changed_columns import BASE_KEYS, joined
from dagster_ds.arrow._entries import data_batches
from dagster_ds.arrow._results import conformed_table, damaged_entry, stored_features
from dagster_ds.arrow._shards import LazyTable, Shard
from dagster_ds.cache import CacheEntry, CacheStore
from dagster_ds.errors import CacheError


def stored_batches(entry: CacheEntry, store: CacheStore) -> Iterator[pa.Table] | None:
    """The rows `open_table_shard` would read from ``entry``, a batch at a time.

    None when it would not open the entry (its base entry is gone, or holds other
    rows). The base entries opened are released once the batches are exhausted.

    Raises:
        CacheError: A file is damaged (checked when first read, as `read_table` does),
            or the entry holds another number of rows than its manifest says.

    Example:
        >>> from dagster_ds.arrow._entries import TableSink
        >>> from dagster_ds.features import Features, Value
        >>> store = CacheStore("memory://stored-batches-doc")
        >>> features = Features({"a": Value("int64")}).to_yaml_list()
        >>> metadata = {"kind": "table", "num_rows": 2, "features": features}
        >>> with store.writer("5" * 32, metadata=metadata) as writer:
        ...     sink = TableSink(writer)
        ...     sink.write(pa.table({"a": [1, 2]}))
        ...     _ = sink.close()
        >>> with store.lookup("5" * 32) as entry:
        ...     [batch.num_rows for batch in stored_batches(entry, store) or ()]
        [2]
    """
    if entry.metadata_item("base") is None:
        return _conformed(entry, _tables(data_batches(entry)), _damage_in(store), None)
    layout = {name: entry.metadata_item(name) for name in BASE_KEYS}
    base_entry = store.lookup(str(layout["base"]))
    if base_entry is None:
        return None
    same_rows = base_entry.metadata_item("num_rows") == entry.metadata_item("num_rows")
    base_rows = stored_batches(base_entry, store) if same_rows else None
    if base_rows is None:
        base_entry.close()
        return None
    pairs = _aligned(_tables(data_batches(entry)), base_rows, entry, store)
    rows = (_joined(own, layout, base_rows_of) for own, base_rows_of in pairs)
    return _conformed(entry, rows, _damage_in(store), base_entry)


def _tables(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    for batch in batches:
        yield pa.Table.from_batches([batch])


def _joined(own: pa.Table, layout: dict[str, Any], base: pa.Table) -> pa.Table:
    whole = joined(own, layout, Shard("", base))
    assert whole is not None, "aligned slices have equal row counts"
    return whole


def _aligned(
    own: Iterator[pa.Table], base: Iterator[pa.Table], entry: CacheEntry, store: CacheStore
) -> Iterator[tuple[pa.Table, pa.Table]]:
    """Equal-length slices of the entry's rows and of its base's, in order."""
    left: pa.Table | None = None
    right: pa.Table | None = None
    while True:
        left, right = _rows_left(own, left), _rows_left(base, right)
        if left is None or right is None:
            if left is not None or right is not None:
                raise damaged_entry(entry, store, "has other rows than its base")
            return
        count = min(left.num_rows, right.num_rows)
        yield left.slice(0, count), right.slice(0, count)
        left, right = left.slice(count), right.slice(count)


def _rows_left(tables: Iterator[pa.Table], current: pa.Table | None) -> pa.Table | None:
    """``current`` if it has rows left, else the next table of ``tables`` that has."""
    while current is None or current.num_rows == 0:
        current = next(tables, None)
        if current is None:
            return None
    return current


Damage = Callable[[CacheEntry, str], CacheError]


def _damage_in(store: CacheStore) -> Damage:
    return lambda entry, what: damaged_entry(entry, store, what)


def _damage(entry: CacheEntry, what: str) -> CacheError:
    return CacheError(
        f"The cache entry {entry.fingerprint!r} at {entry.url!r} {what}: it is damaged. "
        "Delete it and run again to recompute it."
    )


def _conformed(
    entry: CacheEntry, tables: Iterator[pa.Table], damage: Damage, base_entry: CacheEntry | None
) -> Iterator[pa.Table]:
    """``tables`` cast to the entry's features; its row count checked at their end."""
    stored, expected = stored_features(json.dumps(entry.metadata_item("features")))
    num_rows = entry.metadata_item("num_rows")
    rows = 0
    try:
        for table in tables:
            rows += table.num_rows
            yield conformed_table(table, stored, expected)
    finally:
        if base_entry is not None:
            base_entry.close()
    if isinstance(num_rows, int) and rows != num_rows:
        raise damage(entry, f"holds {rows} rows, its manifest {num_rows}")


class StreamedRows:
    """A whole shard's rows, read from its entry a batch at a time by a pass in row order.

    `read` gives rows ``start`` to ``stop`` (zero-copy slices of the batches read);
    `release` drops the batches wholly before a row. A pass holds the batches from
    the first row it has not released to the last it read, not the shard.
    """

    def __init__(self, tables: Iterator[pa.Table]) -> None:
        self._tables = tables
        self._held: list[pa.Table] = []
        self._first = 0  # the row the first held table starts at
        self._end = 0  # the row after the last held table
        #: The rows' schema (that of the whole table), once the first batch is read.
        self.schema: pa.Schema | None = None

    def read(self, start: int, stop: int) -> pa.Table:
        """Rows ``start`` to ``stop`` (``start`` not released yet)."""
        assert start >= self._first, "rows released are not read again"
        while self._end < stop or not self._held:
            table = next(self._tables, None)
            if table is None:
                break
            self._held.append(table)
            self._end += table.num_rows
            self.schema = self.schema or table.schema
        pieces: list[pa.Table] = []
        row = self._first
        for table in self._held:
            low, high = max(start, row), min(stop, row + table.num_rows)
            if low < high:
                pieces.append(table.slice(low - row, high - low))
            row += table.num_rows
        if len(pieces) == 1:
            return pieces[0]
        return pa.concat_tables(pieces) if pieces else self._held[0].slice(0, 0)

    def release(self, row: int) -> None:
        """Drop the rows before ``row``: they are not read again."""
        while self._held and self._first + self._held[0].num_rows <= row:
            self._first += self._held.pop(0).num_rows

    def finish(self) -> None:
        """Read to the end (checking the entry's row count) and drop everything."""
        for _ in self._tables:
            pass
        self._held = []


def streamed_rows(shard: Shard) -> StreamedRows | None:
    """``shard``'s rows for one pass in order, read a batch at a time; None: read it whole.

    See `shard_batches`.
    """
    batches = shard_batches(shard)
    return StreamedRows(batches) if batches is not None else None


def shard_batches(shard: Shard) -> Iterator[pa.Table] | None:
    """All of ``shard``'s rows, a batch at a time, as its table holds them; None: read it whole.

    Only a shard that is all of its table entry's rows, not read yet, in one data file
    and with no base entry is read this way; otherwise, and when its file turns out
    damaged (it is then read whole, which computes it again), None.
    """
    entry = shard.table_entry
    if shard.kept is not None or not _unopened(shard) or entry is None:
        return None
    data_files = [name for name in entry.files if name.startswith("data-")]
    if entry.metadata_item("base") is not None or len(data_files) != 1:
        return None
    batches = _conformed(entry, _tables(data_batches(entry)), _damage, None)
    try:
        first = next(batches, None)  # opens the file, which checks it
    except CacheError:
        return None
    return itertools.chain([first] if first is not None else [], batches)


def _unopened(shard: Shard) -> bool:
    rows = shard.rows
    return isinstance(rows, LazyTable) and rows._table is None  # pyright: ignore[reportPrivateUsage]
