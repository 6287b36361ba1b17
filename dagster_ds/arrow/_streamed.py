"""A stored shard's rows a batch at a time, as its table holds them, in bounded memory.

`open_table_shard` reads an entry's table whole: its data files, joined with the
columns it keeps of its base entry, cast to its features. On an object store that
is a download held in memory for as long as the table is. Hashing the rows of a
shard no one has opened yet (a stored version's content fingerprint) needs them
once, in order: `stored_batches` gives the same rows a record batch at a time, so
that pass holds one batch of each file it reads, whatever the shard's size.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from dagster_ds.arrow._changed_columns import BASE_KEYS, joined
from dagster_ds.arrow._entries import data_batches
from dagster_ds.arrow._results import _conform, _damaged, _stored_features  # pyright: ignore[reportPrivateUsage]
from dagster_ds.arrow._shards import Shard
from dagster_ds.cache import CacheEntry, CacheStore


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
        return _conformed(entry, store, _tables(data_batches(entry)), None)
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
    return _conformed(entry, store, rows, base_entry)


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
                raise _damaged(entry, store, "has other rows than its base")
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


def _conformed(
    entry: CacheEntry,
    store: CacheStore,
    tables: Iterator[pa.Table],
    base_entry: CacheEntry | None,
) -> Iterator[pa.Table]:
    stored, expected = _stored_features(json.dumps(entry.metadata_item("features")))
    num_rows = entry.metadata_item("num_rows")
    rows = 0
    try:
        for table in tables:
            rows += table.num_rows
            yield _conform(table, stored, expected)
    finally:
        if base_entry is not None:
            base_entry.close()
    if isinstance(num_rows, int) and rows != num_rows:
        raise _damaged(entry, store, f"holds {rows} rows, its manifest {num_rows}")
