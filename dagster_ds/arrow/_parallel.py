"""Running row-local transforms over shards, in this process, forked workers or a cluster.

``num_proc`` hands out whole shards; only when there are fewer shards than
processes is each shard split into row ranges. Workers are forked, so the
user's function is inherited, never pickled. A worker that dies (killed,
crashed, out of memory) fails the transform with `WorkerDiedError` naming
what it was computing; nothing it wrote is published.

Before anything is looked up shard by shard, the transform's outputs record
(`_output_records`) is read: when the same transform ran on the same dataset,
every output entry is opened from it, one read in all; after an append, the
unchanged shards' entries are found through the transform's index.

Where the missing shards are computed is a `ShardExecutor` (`dagster_ds.parallel`):
forked workers by default, or one made current by ``with executor:`` or given
to a call (`dagster_ds.distributed.DaskExecutor`). Planning stays here: the
output shard fingerprints, which the store already holds, and reading the
results back; an executor only computes `ShardWork` for the missing pieces:
tables (`TableWork`: map, cast) or kept positions (`IndicesWork`: filter).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pyarrow as pa

from dagster_ds.arrow._column_reuse import (
    ColumnReuse,
    ReuseNote,
    candidates,
    column_reuse_allowed,
    matching_output,
    note_reuse,
    reused_map_write,
    reused_positions,
)
from dagster_ds.arrow._entries import TableSink, read_indices
from dagster_ds.arrow._memory import release_unused
from dagster_ds.arrow._output_records import OutputsRecord
from dagster_ds.arrow._results import (
    Transform,
    open_table_shard,
    positions_entry,
    restricted_shard,
    shard_table,
)
from dagster_ds.arrow._shards import Shard
from dagster_ds.cache import CacheEntry, CacheStore
from dagster_ds.features import Features
from dagster_ds.parallel import (
    LocalProcesses,
    ShardCounts,
    ShardExecutor,
    current_executor,
    record_counts,
)

Output = TypeVar("Output")

#: Makes the function that writes one shard's output: (shard, first row, processes) -> write.
WriteFactory = Callable[[Shard, int, int], Callable[[TableSink], Mapping[str, Any] | None]]

#: One unit of row-local work: an input shard, its first logical row, its output transform.
Piece = tuple[Shard, int, Transform]


@dataclass(frozen=True)
class Recipe:
    """What a transform's fingerprint was hashed from: a remote worker hashes it again.

    Attributes:
        parent: The parent dataset's fingerprint.
        name: The transform's name (``"map"``).
        args: The arguments that were fingerprinted (the function among them).
    """

    parent: str
    name: str
    args: Mapping[str, Any]


class ShardWork(abc.ABC, Generic[Output]):
    """How to compute any output shard of one transform: what an executor ships to workers.

    Attributes:
        transform: The transform over the whole dataset: every piece's shares its
            name and hash tree, rebased on the piece's shard.
        recipe: What ``transform`` was hashed from, when known: a worker that
            receives the work by value checks that it hashes the same there.
        column_reuse: How outputs are matched by the columns their function
            read (`_column_reuse`); None: only by their own key.
    """

    transform: Transform
    recipe: Recipe | None
    column_reuse: ColumnReuse | None

    @abc.abstractmethod
    def compute(
        self, piece: Piece, store: CacheStore | None = None, *, rows_done: list[int] | None = None
    ) -> bool:
        """Write ``piece``'s output shard into ``store`` unless there; whether it ran here.

        ``rows_done`` gets the input rows of each batch done (what a failure
        message counts to name the failing batch's first row).
        """

    @abc.abstractmethod
    def here(
        self, piece: Piece, workers: int, load_from_cache_file: bool, store: CacheStore
    ) -> Output:
        """``piece``'s output, computed in this process (over ``workers``) unless in ``store``."""

    @abc.abstractmethod
    def open(self, entry: CacheEntry, store: CacheStore, piece: Piece) -> Output | None:
        """The output stored in ``entry`` for ``piece``; None if it is unreadable.

        Read when its rows are; if ``entry`` is damaged or gone by then, the
        output is computed again (in this process, through the cache).
        """

    @abc.abstractmethod
    def entry_of(self, output: Output) -> CacheEntry:
        """The cache entry of the output shard ``output``."""

    @abc.abstractmethod
    def reuse(self, old: CacheEntry, store: CacheStore, piece: Piece) -> Output | None:
        """``piece``'s output made from ``old``, an output over the same values in what it read.

        Stored under ``piece``'s own key. None if ``old`` cannot be read (damaged or gone).
        """

    def describe(self, piece: Piece) -> str:
        """``piece`` in errors: its input shard and first row."""
        return f"shard {piece[0].fingerprint} (rows from {piece[1]})"


@dataclass(frozen=True)
class TableWork(ShardWork[tuple[Shard, Features]]):
    """Output shards that are tables a ``make_write`` writes (a map, a cast).

    Attributes:
        make_write: Makes the write of one shard's output.
        features_for: The output features from the schema written.
        keeps_columns: Outputs may reference the input's columns (a map).
    """

    transform: Transform
    make_write: WriteFactory
    features_for: Callable[[pa.Schema], Features]
    keeps_columns: bool = False
    recipe: Recipe | None = None
    column_reuse: ColumnReuse | None = None

    def compute(
        self, piece: Piece, store: CacheStore | None = None, *, rows_done: list[int] | None = None
    ) -> bool:
        shard, start, transform = piece
        write = self.make_write(shard, start, 1)
        ran: list[bool] = []

        def tracked(sink: TableSink) -> Mapping[str, Any] | None:
            ran.append(True)
            return write(_CountingSink(sink, rows_done) if rows_done is not None else sink)  # type: ignore[arg-type]

        output, _ = shard_table(
            transform,
            tracked,
            self.features_for,
            store=store,
            base=shard if self.keeps_columns else None,
        )
        for entry in output.entries:
            entry.close()
        return bool(ran)

    def here(
        self, piece: Piece, workers: int, load_from_cache_file: bool, store: CacheStore
    ) -> tuple[Shard, Features]:
        shard, start, transform = piece
        return shard_table(
            transform,
            self.make_write(shard, start, workers),
            self.features_for,
            load_from_cache_file=load_from_cache_file,
            store=store,
            base=shard if self.keeps_columns and workers == 1 else None,
            rebuild=self._rebuild(piece, store),
        )

    def open(
        self, entry: CacheEntry, store: CacheStore, piece: Piece
    ) -> tuple[Shard, Features] | None:
        return open_table_shard(entry, store, piece[0], self._rebuild(piece, store))

    def entry_of(self, output: tuple[Shard, Features]) -> CacheEntry:
        entry = output[0].table_entry
        assert entry is not None, "a table output shard is a whole cache entry"
        return entry

    def reuse(
        self, old: CacheEntry, store: CacheStore, piece: Piece
    ) -> tuple[Shard, Features] | None:
        shard, _, transform = piece
        write = reused_map_write(shard, old, store)
        if write is None:
            return None
        if self.column_reuse is not None:
            self.column_reuse.wrote(old.metadata_item("written") or [])  # type: ignore[arg-type]
        return shard_table(
            transform,
            write,
            self.features_for,
            store=store,
            base=shard if self.keeps_columns else None,
            rebuild=self._rebuild(piece, store),
        )

    def _rebuild(self, piece: Piece, store: CacheStore) -> Callable[[], pa.Table]:
        return lambda: self.here(piece, 1, True, store)[0].table


#: The positions of an input shard (whose first logical row is given) that a filter keeps;
#: its progress argument is told the rows done, batch by batch.
Positions = Callable[[Shard, int, Any], pa.Array | tuple[pa.Array, Mapping[str, Any]]]


@dataclass(frozen=True)
class IndicesWork(ShardWork[Shard]):
    """Output shards that are the input's rows at some positions (a filter): no copy.

    Attributes:
        positions: The kept positions of one shard.
        bar: Told the rows done when computing in this process.
    """

    transform: Transform
    positions: Positions
    bar: Any
    recipe: Recipe | None = None
    column_reuse: ColumnReuse | None = None

    def compute(
        self, piece: Piece, store: CacheStore | None = None, *, rows_done: list[int] | None = None
    ) -> bool:
        shard, start, transform = piece
        bar = _RowsDone(rows_done) if rows_done is not None else self.bar
        ran: list[bool] = []

        def positions() -> pa.Array | tuple[pa.Array, Mapping[str, Any]]:
            ran.append(True)
            return self.positions(shard, start, bar)

        positions_entry(transform, positions, store=store).close()
        return bool(ran)

    def here(
        self, piece: Piece, workers: int, load_from_cache_file: bool, store: CacheStore
    ) -> Shard:
        del workers  # one shard's positions are computed in one process
        shard, start, transform = piece
        entry = positions_entry(
            transform,
            lambda: self.positions(shard, start, self.bar),
            load_from_cache_file=load_from_cache_file,
            store=store,
        )
        return self.open(entry, store, piece)

    def open(self, entry: CacheEntry, store: CacheStore, piece: Piece) -> Shard:
        shard, start, transform = piece

        def rebuild() -> pa.Array:
            positions = lambda: self.positions(shard, start, _RowsDone([]))  # noqa: E731
            with positions_entry(transform, positions, store=store) as rebuilt:
                return read_indices(rebuilt)

        return restricted_shard(shard, transform.fingerprint, entry, rebuild)

    def entry_of(self, output: Shard) -> CacheEntry:
        return output.entries[-1]

    def reuse(self, old: CacheEntry, store: CacheStore, piece: Piece) -> Shard | None:
        kept = reused_positions(old)
        if kept is None or len(kept[0]) > piece[0].num_rows:
            return None
        return self.open(positions_entry(piece[2], lambda: kept, store=store), store, piece)


class _RowsDone:
    """A progress bar that records the rows of each update."""

    def __init__(self, rows: list[int]) -> None:
        self._rows = rows

    def update(self, n: int = 1) -> None:
        self._rows.append(n)


class _CountingSink:
    """A sink that records the input rows of each batch written through it."""

    def __init__(self, sink: TableSink, rows: list[int]) -> None:
        self._sink, self._rows = sink, rows

    def write(self, data: pa.Table | pa.RecordBatch, source: pa.Table | None = None) -> None:
        self._sink.write(data, source)
        self._rows.append(source.num_rows if source is not None else 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sink, name)


def run_shards(
    pieces: Sequence[Piece],
    make_write: WriteFactory,
    features_for: Callable[[pa.Schema], Features],
    *,
    workers: int,
    load_from_cache_file: bool,
    keeps_columns: bool = False,
    executor: ShardExecutor | None = None,
    recipe: Recipe | None = None,
    whole: Transform | None = None,
    column_reuse: ColumnReuse | None = None,
) -> list[tuple[Shard, Features]]:
    """The output table shard of each ``(shard, first row, transform)``, computed where missing.

    ``keeps_columns``: outputs may keep input columns as they are, which are
    then referenced, not stored again (a map). ``whole``: the transform over
    the whole dataset, whose outputs are then recorded. ``column_reuse``: outputs
    may be reused by what they read (see `_column_reuse`). See `run_work`.
    """
    if not pieces:
        return []
    work = TableWork(
        whole or pieces[0][2], make_write, features_for, keeps_columns, recipe, column_reuse
    )
    return run_work(
        pieces,
        work,
        workers=workers,
        load_from_cache_file=load_from_cache_file,
        executor=executor,
        records=whole is not None,
    )


def run_work(
    pieces: Sequence[Piece],
    work: ShardWork[Output],
    *,
    workers: int,
    load_from_cache_file: bool,
    executor: ShardExecutor | None = None,
    records: bool = True,
) -> list[Output]:
    """The output of each ``(shard, first row, transform)`` by ``work``, computed where missing.

    With ``records``, ``work.transform``'s outputs record is read first (see
    `_output_records`): the outputs it names are opened from it, nothing read;
    it is written again when some output was not there. The other pieces: with
    several workers and at least as many shards, or with a remote executor
    (given, or current), each missing shard is computed by a worker straight
    into the cache, and read back here; otherwise shards run one after the
    other, each split over the workers where ``work`` can. ``work.recipe``:
    what the transform was hashed from, checked by remote workers.
    """
    store = CacheStore()
    reusable = (
        load_from_cache_file
        and not store.random_names
        and all(transform.reusable for _, _, transform in pieces)
    )
    record = (
        OutputsRecord.read(store, work.transform, [piece[2].fingerprint for piece in pieces])
        if records and reusable and work.transform.reusable and pieces
        else None
    )
    results: list[Output | None] = [None] * len(pieces)
    if record is not None:
        for position, piece in enumerate(pieces):
            entry = record.entry(store, piece[2].fingerprint)
            results[position] = work.open(entry, store, piece) if entry is not None else None
    missing = [position for position, output in enumerate(results) if output is None]
    if record is not None and missing and work.column_reuse is not None and column_reuse_allowed():
        for position, output in reused_by_columns(work, store, record, pieces, missing).items():
            results[position] = output
    to_compute = [position for position in missing if results[position] is None]
    chosen = executor or current_executor()
    spread = reusable and (
        (chosen is not None and chosen.remote) or (workers > 1 and len(pieces) >= workers)
    )
    todo = [pieces[position] for position in to_compute]
    if spread:
        computed = _spread(todo, work, store, chosen, workers, recorded=len(pieces) - len(todo))
    else:
        computed = [_here(work, piece, workers, load_from_cache_file, store) for piece in todo]
    for position, output in zip(to_compute, computed, strict=True):
        results[position] = output
    outputs = [output for output in results if output is not None]
    if record is not None and (missing or not record.exact):
        recorded = set(range(len(pieces))) - set(missing)
        record.write(
            store,
            [
                record.manifests[piece[2].fingerprint]
                if position in recorded
                else work.entry_of(output).manifest
                for position, (piece, output) in enumerate(zip(pieces, outputs, strict=True))
            ],
        )
    return outputs


def _here(
    work: ShardWork[Output],
    piece: Piece,
    workers: int,
    load_from_cache_file: bool,
    store: CacheStore,
) -> Output:
    """``work.here(piece, ...)``, keeping none of the input shard's rows it opened.

    A driver mapping shard after shard then holds one input shard at a time, not
    all of them by the end (each is opened again if its rows are asked for later);
    the memory they took is given back to the system (`release_unused`).
    """
    try:
        with piece[0].opened_for_now():
            return work.here(piece, workers, load_from_cache_file, store)
    finally:
        release_unused()


def reused_by_columns(
    work: ShardWork[Output],
    store: CacheStore,
    record: OutputsRecord,
    pieces: Sequence[Piece],
    missing: Sequence[int],
) -> dict[int, Output]:
    """The outputs of the ``missing`` pieces that earlier outputs give by what they read.

    Looked up among the outputs ``record`` names (already read): nothing more is read
    but the new shards' read columns, to fingerprint them (see `_column_reuse`).
    """
    assert work.column_reuse is not None
    by_key, read_sets = candidates(record.manifests.values())
    found: dict[int, Output] = {}
    if not by_key:
        return found
    reads: set[str] = set()
    for position in missing:
        shard, start, _ = pieces[position]
        base = work.column_reuse.base(start)
        key = matching_output(shard, base, by_key, read_sets) if base is not None else None
        old = record.entry(store, key) if key is not None else None
        output = work.reuse(old, store, pieces[position]) if old is not None else None
        if output is not None and old is not None:
            found[position] = output
            reads.update(str(name) for name in old.metadata_item("column_reads") or [])  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType, reportGeneralTypeIssues]
    note = ReuseNote(
        work.column_reuse.function, tuple(sorted(reads)), len(found), len(missing), len(pieces)
    )
    note_reuse(note)
    return found


def _spread(
    pieces: Sequence[Piece],
    work: ShardWork[Output],
    store: CacheStore,
    chosen: ShardExecutor | None,
    workers: int,
    *,
    recorded: int,
) -> list[Output]:
    """The output of each of ``pieces``, looked up, the missing ones computed by ``chosen``.

    ``recorded``: outputs of the same transform found from its record, counted as cached.
    """
    found = {
        transform.fingerprint: store.lookup(transform.fingerprint) for _, _, transform in pieces
    }
    # One piece per output fingerprint: identical input shards are computed once.
    missing = list(
        {
            piece[2].fingerprint: piece for piece in pieces if not found[piece[2].fingerprint]
        }.values()
    )
    counts = ShardCounts(cached=recorded + len(found) - len(missing))
    if missing:
        counts.add((chosen or LocalProcesses()).compute(work, missing, store, workers))
    if chosen is not None:
        chosen.record(counts)
    record_counts(counts)
    for _, _, transform in missing:
        found[transform.fingerprint] = store.lookup(transform.fingerprint)
    results: list[Output] = []
    for piece in pieces:
        entry = found[piece[2].fingerprint]
        opened = work.open(entry, store, piece) if entry is not None else None
        if opened is None:  # evicted or damaged since: compute it here
            opened = work.here(piece, 1, True, store)
        results.append(opened)
    return results
