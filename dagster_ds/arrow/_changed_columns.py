"""Map outputs that store only the columns the map changed.

A map that adds or replaces columns leaves the other columns as they were:
the very same Arrow arrays of its input shard. When that shard is a whole
cache entry, its output entry stores only the changed columns, and its
manifest names the input entry (``base``) and the columns taken from it, in
order. Opening the entry puts the two side by side again, zero-copy. A column
counts as unchanged only when it is the input's own array (same buffers,
offsets and lengths, batch by batch), so a function that rebuilt a column,
even with equal values, has it stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dagster_ds.arrow._entries import TableSink

if TYPE_CHECKING:
    from dagster_ds.arrow._shards import Shard
    from dagster_ds.cache import CacheEntry, CacheStore


#: The manifest metadata keys that say how an entry joins its base entry.
BASE_KEYS = ("base", "base_columns", "column_order")


class LayoutChanged(Exception):  # an internal signal, never raised to users
    """The unchanged columns differ between batches: store the shard whole instead."""


class ChangedColumnsSink:
    """Writes the columns of each output batch that are not its input's own, into ``sink``."""

    def __init__(self, sink: TableSink) -> None:
        self.sink = sink
        # The input's schema, from its rows as they come: the base is not read whole for it.
        self.base_schema: pa.Schema | None = None
        self.kept: list[str] | None = None
        self.order: list[str] | None = None

    @property
    def num_rows(self) -> int:
        return self.sink.num_rows

    def write(self, data: pa.Table | pa.RecordBatch, source: pa.Table | None = None) -> None:
        """Write ``data``, the map output of the input rows ``source``."""
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        kept = [
            name
            for name in table.column_names
            if source is not None
            and name in source.column_names
            and same_array(table.column(name), source.column(name))
        ]
        if self.base_schema is None and source is not None:
            self.base_schema = source.schema
        if self.order is None:
            self.kept, self.order = kept, table.column_names
        elif table.num_rows and (
            not set(self.kept or ()) <= set(kept) or table.column_names != self.order
        ):  # a column referenced so far changed: these rows cannot reference it
            raise LayoutChanged
        self.sink.write(table.drop_columns(self.kept or []))

    def close(self, empty_schema: pa.Schema | None = None) -> pa.Schema:
        """Finish writing; the schema of the whole output (stored and referenced columns)."""
        written = self.sink.close(empty_schema)
        if self.order is None or self.base_schema is None:
            return written
        return pa.schema(
            [
                self.base_schema.field(name) if name in (self.kept or []) else written.field(name)
                for name in self.order
            ]
        )

    def metadata(self, base: CacheEntry) -> dict[str, Any]:
        """What the entry's manifest records to be opened with its base."""
        if not self.kept:
            return {}
        return {"base": base.key, "base_columns": self.kept, "column_order": self.order}


def same_array(output: pa.ChunkedArray, source: pa.ChunkedArray) -> bool:
    """Whether ``output`` is ``source`` itself: the same buffers, offsets and lengths."""
    if not output.type.equals(source.type) or output.num_chunks != source.num_chunks:
        return False
    for mine, theirs in zip(output.chunks, source.chunks, strict=True):
        if len(mine) != len(theirs) or mine.offset != theirs.offset:
            return False
        ours, others = mine.buffers(), theirs.buffers()
        if len(ours) != len(others):
            return False
        for one, other in zip(ours, others, strict=True):
            if (one is None) != (other is None):
                return False
            if one is not None and other is not None and one.address != other.address:
                return False
    return True


def base_of(
    metadata: dict[str, Any], store: CacheStore, known: Shard | None = None
) -> Shard | None:
    """The open shard of the base entry whose columns an entry keeps; None if it is gone.

    ``known``: a shard already open (the map's input), used as the base when it
    is the base's whole entry, instead of opening that entry again. The base's
    table itself is read only when `joined` needs it.
    """
    from dagster_ds.arrow._results import lookup_table_shard

    base_key = metadata["base"]
    if (
        known is not None
        and known.indices is None
        and known.table_entry is not None
        and known.table_entry.key == base_key
        and store.holds(known.table_entry)
    ):
        return known
    return lookup_table_shard(store, base_key)


def joined(table: pa.Table, metadata: dict[str, Any], base: Shard) -> pa.Table | None:
    """``table`` (the stored columns) with ``base``'s columns; None if their rows differ."""
    base_table = base.table
    if base_table.num_rows != table.num_rows:
        return None
    columns = {name: table.column(name) for name in table.column_names}
    for name in metadata["base_columns"]:
        columns[name] = base_table.column(name)
    order: list[str] = list(metadata["column_order"])
    return pa.Table.from_arrays(
        [columns[name] for name in order],
        schema=pa.schema(
            [
                base_table.schema.field(name)
                if name in metadata["base_columns"]
                else table.schema.field(name)
                for name in order
            ]
        ),
    )
