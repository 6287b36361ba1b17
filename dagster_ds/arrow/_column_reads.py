"""What a map or filter read of each input shard, recorded in the shard's output entry.

Computing an output shard, the engine sees which input columns the function
read (`dagster_ds.formatting.observed_reads`, batch by batch) and which columns
it wrote. The output entry's manifest records:

- ``column_reads``: the input columns read over the whole shard, sorted (None:
  every column, the engine could not see);
- ``read_fingerprints``: each read column's content fingerprint in that input;
- ``written``: the output columns the function made, the same in every batch
  (absent when batches differ: the shard is then never reused by its reads);
- ``column_key``: the key `column_key` gives for all that, under which a later
  run over an input with the same values in those columns finds the output
  (see `_column_reuse`).

A column's fingerprint is `arrow_digest` of its values: independent of
chunking and slicing. A map output records those of the columns it made
(``column_fingerprints``), computed as they are written (`FingerprintingSink`);
other columns' are computed when first needed and kept per shard fingerprint
in this process (a shard's fingerprint names its content).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import xxhash

from dagster_ds.arrow._changed_columns import ChangedColumnsSink, same_array
from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._shards import Shard
from dagster_ds.arrow._streamed import shard_batches
from dagster_ds.cache import CacheEntry
from dagster_ds.fingerprint import ColumnDigests, HashNode, arrow_digest, rebase_transform
from dagster_ds.formatting import ReadSet, union_reads

#: The parent a transform is rebased on to name it without its input.
NO_PARENT = "0" * 32
#: Column fingerprints kept in this process, by (shard fingerprint, column).
_KEPT_FINGERPRINTS = 4096


@dataclass
class ShardReads:
    """What a function read and wrote over the batches of one shard.

    Attributes:
        reads: The input columns read (None: every column).
        layouts: Each batch's (columns written, input columns removed).
    """

    reads: ReadSet = frozenset()
    layouts: set[tuple[tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=set[tuple[tuple[str, ...], tuple[str, ...]]]
    )

    def add(self, reads: ReadSet, written: Sequence[str], removed: Sequence[str]) -> None:
        """Record one batch: what it read, the columns it wrote and those it removed.

        Called once per batch of a map: a batch that reads nothing new makes no new set.
        """
        known = self.reads
        if known is not None and (reads is None or not reads <= known):
            self.reads = union_reads(known, reads)
        self.layouts.add((tuple(written), tuple(sorted(set(removed))) if removed else ()))

    def read_all(self, names: Iterable[str]) -> bool:
        """Whether every column of ``names`` is read already (so later reads change nothing)."""
        return self.reads is None or self.reads.issuperset(names)

    def update(self, other: ShardReads) -> None:
        """Add what ``other`` saw (another range of the same shard)."""
        self.reads = union_reads(self.reads, other.reads)
        self.layouts |= other.layouts

    def written(self) -> list[str] | None:
        """The columns every batch wrote (None when batches wrote different ones)."""
        if len(self.layouts) != 1:
            return None
        return list(next(iter(self.layouts))[0])


def recorded_reads(
    log: ShardReads,
    shard: Shard,
    base: str | None,
    *,
    rows_kept: bool = True,
    schema: pa.Schema | None = None,
) -> dict[str, Any]:
    """The manifest items that record ``log`` for the output of ``shard``.

    ``base``: the transform without its input (`transform_base`); None when its
    outputs may not be reused by their reads (a random fingerprint). ``rows_kept``:
    the output has the input's rows (a map); a filter keeps positions instead.
    ``schema``: ``shard``'s, when known without opening its table (see `column_key`).
    """
    reads = log.reads
    recorded: dict[str, Any] = {"column_reads": sorted(reads) if reads is not None else None}
    written = log.written() if rows_kept else []
    if reads is None or written is None or base is None:
        return recorded
    fingerprints = column_fingerprints(shard, reads)
    recorded.update(
        read_fingerprints=fingerprints,
        written=written,
        column_key=column_key(base, shard, fingerprints, schema),
    )
    return recorded


def transform_base(tree: HashNode | None, **values: str | int) -> str | None:
    """The transform ``tree`` names, without its input (its shard's ``values`` in)."""
    return rebase_transform(tree, NO_PARENT, **values) if tree is not None else None


def column_key(
    base: str, shard: Shard, fingerprints: Mapping[str, str], schema: pa.Schema | None = None
) -> str:
    """The key of an output of ``base`` over ``shard``, whose read columns have ``fingerprints``.

    It names everything the function could see of its input besides the values
    of the columns it did not read: the columns' names and types in order (a
    name lookup is not a read), the schema's metadata (features, which decide
    how values are decoded), the row count, and the read columns' values.
    ``schema``: the shard's, when known (a pass that read its rows a batch at a
    time); otherwise its table is opened for it.
    """
    schema = schema if schema is not None else shard.table.schema
    described = {
        "transform": base,
        "columns": [[each.name, str(each.type)] for each in schema],
        "metadata": {
            key.decode("utf-8", "replace"): value.decode("utf-8", "replace")
            for key, value in (schema.metadata or {}).items()
        },
        "rows": shard.num_rows,
        "reads": sorted(fingerprints.items()),
    }
    text = json.dumps(described, sort_keys=True)
    return xxhash.xxh3_128_hexdigest(f"column-key\0{text}".encode())


def column_fingerprints(shard: Shard, names: Iterable[str]) -> dict[str, str]:
    """The content fingerprint of each column ``names`` of ``shard``'s rows.

    Independent of how the rows are chunked or sliced; computed once per shard
    fingerprint and column in a process.
    """
    found: dict[str, str] = {}
    missing: list[str] = []
    stored = _stored_fingerprints(shard)
    for name in sorted(names):
        with _LOCK:
            known = _FINGERPRINTS.get((shard.fingerprint, name)) or stored.get(name)
        if known is None:
            missing.append(name)
        else:
            found[name] = known
    if missing:
        hashed = _hashed_columns(shard, missing)
        with _LOCK:
            for name, known in hashed.items():
                _FINGERPRINTS[shard.fingerprint, name] = known
            while len(_FINGERPRINTS) > _KEPT_FINGERPRINTS:
                _FINGERPRINTS.popitem(last=False)
        found.update(hashed)
    return dict(sorted(found.items()))


def _hashed_columns(shard: Shard, names: Sequence[str]) -> dict[str, str]:
    """The `arrow_digest` of each column ``names`` of ``shard`` that is an input column.

    A whole stored shard not read yet is hashed a batch at a time (`shard_batches`).
    """
    batches = shard_batches(shard) if shard.num_rows else None
    if batches is None:
        table = shard.read(0, shard.num_rows)
        present = [name for name in names if name in table.column_names]
        return {name: arrow_digest(table.column(name)) for name in present}
    digests = ColumnDigests()
    for table in batches:
        present = [name for name in names if name in table.column_names]
        # Copied out of the batch: a slice of it would keep all of its columns' bytes
        # while the columns hashed gather into a window.
        columns = [pa.concat_arrays(table.column(name).chunks) for name in present]
        fields = [table.schema.field(name) for name in present]
        digests.feed(pa.Table.from_arrays(columns, schema=pa.schema(fields)))
    return digests.hexdigests()


def _stored_fingerprints(shard: Shard) -> Mapping[str, str]:
    """The column fingerprints ``shard``'s entries recorded when written (all of its rows).

    Those of its table entry, and of the columns that entry keeps in its base
    entries (a map output stores only the columns it changed): the map's input
    columns it passed through are not hashed again.
    """
    if shard.kept is not None or shard.table_entry is None:
        return {}
    return recorded_fingerprints(shard.table_entry, {each.key: each for each in shard.entries})


def recorded_fingerprints(entry: CacheEntry, entries: Mapping[str, CacheEntry]) -> dict[str, str]:
    """The column fingerprints ``entry`` recorded, with those of the columns its bases keep.

    ``entries``: the entries its rows are read from, by key (its bases among them).
    """
    recorded = entry.metadata_item("column_fingerprints")
    found = dict(recorded) if isinstance(recorded, dict) else {}
    base_key, kept = entry.metadata_item("base"), entry.metadata_item("base_columns")
    base = entries.get(base_key) if isinstance(base_key, str) else None
    if base is not None and base is not entry and isinstance(kept, list):
        of_base = recorded_fingerprints(base, {k: e for k, e in entries.items() if k != entry.key})
        found.update({name: of_base[name] for name in kept if name in of_base})
    return {str(name): value for name, value in found.items() if isinstance(value, str)}


class FingerprintingSink:
    """A sink that fingerprints the columns written through it (see `ColumnDigests`).

    Only the columns that are not their input's own arrays (``source``'s): a
    column kept as it is has its input's fingerprint, and hashing it again
    would cost a pass over data the map never touched. When ``sink`` stores
    only those columns (a `ChangedColumnsSink`), its `TableSink` hashes the
    record batches it writes: the buffers it has just combined, not a second
    copy, and no second check of which columns are the input's.
    Read the digests with `hexdigests`, before the sink is closed.
    """

    def __init__(self, sink: Any) -> None:
        self._sink = sink
        self.digests = ColumnDigests()
        stored = sink.sink if isinstance(sink, ChangedColumnsSink) else None
        self._below = (
            isinstance(stored, TableSink) and stored.digests is None and stored.num_rows == 0
        )
        if self._below:
            stored.digests = self.digests  # pyright: ignore[reportOptionalMemberAccess]

    def write(self, data: pa.Table | pa.RecordBatch, source: pa.Table | None = None) -> None:
        if self._below:
            self._sink.write(data, source)
            return
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        names = table.schema.names
        if source is not None:
            kept = source.schema.names
            names = [
                name
                for name in names
                if name not in kept or not same_array(table.column(name), source.column(name))
            ]
        self.digests.feed(table.select(names))
        self._sink.write(data, source)

    def hexdigests(self) -> dict[str, str]:
        """Each column's digest, over every row written so far."""
        if self._below:
            self._sink.sink.flush()
        return self.digests.hexdigests()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sink, name)


_FINGERPRINTS: OrderedDict[tuple[str, str], str] = OrderedDict()
_LOCK = threading.Lock()


def reads_of(entries: Iterable[CacheEntry]) -> ReadSet:
    """The columns the outputs in ``entries`` read, together (None: every column).

    An entry that recorded nothing (written by an earlier release) read every column.
    """
    found: ReadSet = frozenset()
    for entry in entries:
        reads = entry.metadata_item("column_reads")
        if not isinstance(reads, list):
            return None
        found = union_reads(found, frozenset(str(name) for name in reads))  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    return found


def written_of(entries: Iterable[CacheEntry]) -> frozenset[str] | None:
    """The columns the map outputs in ``entries`` wrote, together (None: not all recorded)."""
    found: set[str] = set()
    for entry in entries:
        written = entry.metadata_item("written")
        if not isinstance(written, list):
            return None
        found.update(str(name) for name in written)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    return frozenset(found)
