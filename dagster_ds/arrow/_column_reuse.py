"""Reuse by read columns: an output shard whose input changed only in columns it did not read.

A map or filter output records what its function read (`_column_reads`). When
an input shard is new (its fingerprint changed: a file rewritten), its output
is not under its key; but the outputs the transform's record names (one read,
already made, see `_output_records`) each carry a ``column_key``. For each
distinct read set among them, the new shard's key is computed from the values
of those columns only; an output under that key was computed from the same
values in every column its function read, so it is reused:

- a map's written columns come from the old output, its pass-through columns
  from the new input, by reference (only the written ones are stored again);
- a filter's kept positions are reused, its rows come from the new input.

Why this is sound: a deterministic function given the same values in every
column it read (and the same column names, types, features and row count, all
in the key) takes the same path, so it reads the same columns and returns the
same output. What it did not read cannot have changed its result. Never used
for transforms without a stable hash (random fingerprints, unhashable
functions: they have no record), nor when the engine could not see the reads
(another format, a per-example row, ``dict(batch)``: the read set is then every
column, and its key changes with any column). A function with hidden inputs
(the clock, the environment, files) is outside the argument: where they are
declared (an asset's ``fingerprint_inputs`` or resources), the asset runs under
`column_reuse_off` and every changed shard is computed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from dagster_ds.arrow._column_reads import column_fingerprints, column_key
from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._shards import Shard
from dagster_ds.cache import CacheEntry, CacheStore
from dagster_ds.errors import CacheError

Output = TypeVar("Output")

#: Distinct read sets tried per missing shard: each costs a hash of those columns.
MAX_READ_SETS = 8
#: Rows of a reused map output written at once.
_ROWS_PER_WRITE = 65_536


_OFF: ContextVar[bool] = ContextVar("dagster_ds_column_reuse_off", default=False)


@contextlib.contextmanager
def column_reuse_off(off: bool = True) -> Iterator[None]:
    """No output is reused by its read columns inside the block (when ``off``).

    For functions whose result depends on more than their input's columns (an
    asset's declared hidden inputs): their outputs are still reused by their own
    key, which names the whole input shard.

    Example:
        >>> with column_reuse_off():
        ...     column_reuse_allowed()
        False
    """
    token = _OFF.set(off or _OFF.get())
    try:
        yield
    finally:
        _OFF.reset(token)


def column_reuse_allowed() -> bool:
    """Whether outputs may be reused by their read columns here (see `column_reuse_off`)."""
    return not _OFF.get()


@dataclass(frozen=True)
class ReuseNote:
    """What one transform reused by read columns, in words for run logs and metadata.

    Attributes:
        function: The transform's function, by name (``'n_chars'``).
        reads: The columns its reused outputs read, together.
        reused: Output shards reused by their read columns.
        changed: Output shards not under their own key (their input changed).
        shards: All its output shards.
    """

    function: str
    reads: tuple[str, ...]
    reused: int
    changed: int
    shards: int

    def sentence(self) -> str:
        """E.g. ``'n_chars' reads only 'text': reused 1 of 1 changed shards (20 in all)``."""
        reads = ", ".join(repr(name) for name in self.reads) or "no column"
        return (
            f"{self.function!r} reads only {reads}: reused {self.reused} of {self.changed} "
            f"changed shards ({self.shards} in all)"
        )


_NOTES: ContextVar[tuple[list[ReuseNote], ...]] = ContextVar("dagster_ds_reuse_notes", default=())


@contextlib.contextmanager
def noting_column_reuse() -> Iterator[list[ReuseNote]]:
    """Collect, over the block, a `ReuseNote` per transform that looked for reuse by columns.

    Example:
        >>> with noting_column_reuse() as notes:
        ...     pass
        >>> notes
        []
    """
    notes: list[ReuseNote] = []
    token = _NOTES.set((*_NOTES.get(), notes))
    try:
        yield notes
    finally:
        _NOTES.reset(token)


def note_reuse(note: ReuseNote) -> None:
    """Add ``note`` to every `noting_column_reuse` block open here."""
    for notes in _NOTES.get():
        notes.append(note)


@dataclass(frozen=True)
class ColumnReuse:
    """How a transform's outputs are matched by the columns they read.

    Attributes:
        base: The transform without its input, for the shard whose first
            logical row is given (`transform_base`); None: never reused.
        wrote: Told the columns a reused map output wrote (its features follow them).
        function: The transform's function, by name, for `ReuseNote`.
    """

    base: Callable[[int], str | None]
    wrote: Callable[[Sequence[str]], None] = lambda _names: None
    function: str = "function"


def candidates(manifests: Iterable[Mapping[str, Any]]) -> tuple[dict[str, str], list[list[str]]]:
    """The recorded outputs by column key (to their key), and their distinct read sets."""
    by_key: dict[str, str] = {}
    read_sets: dict[tuple[str, ...], list[str]] = {}
    for manifest in manifests:
        metadata = manifest.get("metadata")
        fingerprint = manifest.get("fingerprint")
        if not isinstance(metadata, Mapping) or not isinstance(fingerprint, str):
            continue
        key, reads = metadata.get("column_key"), metadata.get("column_reads")
        if isinstance(key, str) and isinstance(reads, list):
            names = [name for name in reads if isinstance(name, str)]
            by_key.setdefault(key, fingerprint)
            read_sets.setdefault(tuple(names), names)
    return by_key, list(read_sets.values())[:MAX_READ_SETS]


def matching_output(
    shard: Shard, base: str, by_key: Mapping[str, str], read_sets: Sequence[Sequence[str]]
) -> str | None:
    """The key of a recorded output computed from ``shard``'s values in what it read."""
    for names in read_sets:
        if any(name not in shard.table.column_names for name in names):
            continue
        found = by_key.get(column_key(base, shard, column_fingerprints(shard, names)))
        if found is not None:
            return found
    return None


def reused_map_write(
    shard: Shard, old: CacheEntry, store: CacheStore
) -> Callable[[TableSink], Mapping[str, Any]] | None:
    """The write of a map output over ``shard`` made of ``old``'s written columns.

    None if ``old`` cannot give them (damaged or gone: checked at this read, as
    any read; its rows no longer line up).
    """
    from dagster_ds.arrow._results import open_table_shard

    metadata = {name: old.metadata_item(name) for name in _RECORDED}
    written = metadata["written"]
    if not isinstance(written, list):
        return None
    try:
        opened = open_table_shard(old, store)
        table = opened[0].table if opened is not None else None
    except CacheError:
        return None
    if table is None:
        return None
    names: list[str] = [str(name) for name in written]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    through = [name for name in table.column_names if name not in names]
    if through and table.num_rows != shard.num_rows:
        return None
    if any(name not in shard.table.column_names for name in through):
        return None

    def write(sink: TableSink) -> Mapping[str, Any]:
        for start in range(0, max(table.num_rows, 1), _ROWS_PER_WRITE):
            stop = min(start + _ROWS_PER_WRITE, table.num_rows)
            inputs = shard.read(start, stop)
            columns = [
                table.column(name).slice(start, stop - start)
                if name in names
                else inputs.column(name)
                for name in table.column_names
            ]
            fields = [
                table.schema.field(name) if name in names else inputs.schema.field(name)
                for name in table.column_names
            ]
            sink.write(pa.Table.from_arrays(columns, schema=pa.schema(fields)), inputs)
        return {**metadata, **_written_fingerprints(old, names), "reused_by_columns": old.key}

    return write


def _written_fingerprints(old: CacheEntry, names: Sequence[str]) -> dict[str, Any]:
    """The column fingerprints ``old`` recorded of the columns ``names`` (copied as they are)."""
    recorded = old.metadata_item("column_fingerprints")
    if not isinstance(recorded, Mapping) or not all(name in recorded for name in names):
        return {}
    return {"column_fingerprints": {name: recorded[name] for name in names}}


def reused_positions(old: CacheEntry) -> tuple[pa.Array, dict[str, Any]] | None:
    """A filter's kept positions in ``old`` and what it recorded; None if they cannot be read."""
    from dagster_ds.arrow._entries import read_indices

    try:
        positions = read_indices(old)
    except CacheError:
        return None
    recorded = {name: old.metadata_item(name) for name in _RECORDED}
    return positions, {**recorded, "reused_by_columns": old.key}


_RECORDED = ("column_reads", "read_fingerprints", "written", "column_key")
