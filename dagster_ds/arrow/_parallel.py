"""Running row-local transforms over shards, in this process or in forked workers.

``num_proc`` hands out whole shards; only when there are fewer shards than
processes is each shard split into row ranges. Workers are forked, so the
user's function is inherited, never pickled. A worker that dies (killed,
crashed, out of memory) fails the transform with `WorkerDiedError` naming
what it was computing; nothing it wrote is published.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import pyarrow as pa

from dagster_ds.arrow._entries import TableSink
from dagster_ds.arrow._results import Transform, open_table_shard, shard_table
from dagster_ds.arrow._shards import Shard
from dagster_ds.cache import CacheStore
from dagster_ds.errors import WorkerDiedError
from dagster_ds.features import Features

Item = TypeVar("Item")
Result = TypeVar("Result")

#: Makes the function that writes one shard's output: (shard, first row, processes) -> write.
WriteFactory = Callable[[Shard, int, int], Callable[[TableSink], None]]

# What forked workers run, keyed by the pid of the process that forked them.
_FORKED: dict[int, Callable[[Any], Any]] = {}


def in_processes(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    workers: int,
    *,
    what: Callable[[Item], str],
) -> Iterator[Result]:
    """``function`` over ``items`` in ``workers`` forked processes, results in order.

    Raises:
        WorkerDiedError: A worker process died; ``what(item)`` names its work.
    """
    _FORKED[os.getpid()] = function
    context = multiprocessing.get_context("fork")
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = [pool.submit(_call_forked, item) for item in items]
            for item, future in zip(items, futures, strict=True):
                try:
                    yield future.result()
                except BrokenProcessPool as error:
                    raise WorkerDiedError(
                        f"A worker process died while computing {what(item)} (killed, crashed "
                        "or out of memory); nothing of its work was cached. Rerun it, with "
                        "fewer processes (num_proc=...) if memory is short."
                    ) from error
    finally:
        _FORKED.pop(os.getpid(), None)


def _call_forked(item: Any) -> Any:
    return _FORKED[os.getppid()](item)


def run_shards(
    pieces: Sequence[tuple[Shard, int, Transform]],
    make_write: WriteFactory,
    features_for: Callable[[pa.Schema], Features],
    *,
    workers: int,
    load_from_cache_file: bool,
    keeps_columns: bool = False,
) -> list[tuple[Shard, Features]]:
    """The output shard of each ``(shard, first row, transform)``, computed where missing.

    With several workers and at least as many shards, each missing shard is
    computed by a worker straight into the cache, and read back here;
    otherwise shards run one after the other, each split over the workers.
    ``keeps_columns``: outputs may keep input columns as they are, which are
    then referenced, not stored again (a map).
    """
    store = CacheStore()
    parallel = (
        workers > 1
        and len(pieces) >= workers
        and load_from_cache_file
        and not store.random_names
        and all(transform.reusable for _, _, transform in pieces)
    )
    if not parallel:
        return [
            shard_table(
                transform,
                make_write(shard, start, workers),
                features_for,
                load_from_cache_file=load_from_cache_file,
                base=shard if keeps_columns and workers == 1 else None,
            )
            for shard, start, transform in pieces
        ]
    found = {
        transform.fingerprint: store.lookup(transform.fingerprint) for _, _, transform in pieces
    }
    missing = [piece for piece in pieces if found[piece[2].fingerprint] is None]

    def compute(piece: tuple[Shard, int, Transform]) -> str:
        shard, start, transform = piece
        output, _ = shard_table(
            transform,
            make_write(shard, start, 1),
            features_for,
            base=shard if keeps_columns else None,
        )
        for entry in output.entries:
            entry.close()
        return transform.fingerprint

    computed = in_processes(
        compute,
        missing,
        min(workers, len(missing)) or 1,
        what=lambda piece: f"shard {piece[0].fingerprint} (rows from {piece[1]})",
    )
    for fingerprint in computed:
        found[fingerprint] = store.lookup(fingerprint)
    results: list[tuple[Shard, Features]] = []
    for shard, start, transform in pieces:
        entry = found[transform.fingerprint]
        opened = open_table_shard(entry, store, shard) if entry is not None else None
        if opened is None:  # evicted or damaged since: compute it here
            opened = shard_table(
                transform,
                make_write(shard, start, 1),
                features_for,
                base=shard if keeps_columns else None,
            )
        results.append(opened)
    return results
