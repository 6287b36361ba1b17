"""What a cluster worker runs for one output shard.

The task checks that the work it received hashes, here, to the driver's
transform hash (a worker whose image holds other code for the function must
never write a false cache hit), opens its input shard from the store through
fsspec, computes the output shard into the store with
`CacheStore.get_or_create` (so that two drivers compute it once) and returns
a small manifest. It publishes nothing else: the driver does.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

import pyarrow as pa

from dagster_ds.arrow import Shard, Transform, open_table_shard
from dagster_ds.cache import CacheStore
from dagster_ds.distributed._payload import Payload, loads
from dagster_ds.errors import CacheError, ShardTaskError, StaleWorkerError
from dagster_ds.fingerprint import fingerprint_transform

_CHECKED: dict[str, str] = {}


@dataclass(frozen=True)
class ShardTask:
    """One task: which output shard to compute, from which input shard.

    Attributes:
        fingerprint: The output shard's fingerprint (the task key).
        parents: The output shard's parent fingerprints (its input shard's).
        shard_fingerprint: The input shard's fingerprint.
        entry_key: The store entry holding the input shard's table, if any
            (else the table travels with the task).
        indices: The rows of that table the input shard holds (None: all).
        start: The input shard's first logical row.
        num_rows: The input shard's row count.
    """

    fingerprint: str
    parents: tuple[str, ...]
    shard_fingerprint: str
    entry_key: str | None
    indices: pa.Array | None
    start: int
    num_rows: int

    def describe(self) -> str:
        last = self.start + self.num_rows - 1
        return (
            f"the shard of rows {self.start} to {last} of the dataset (input shard"
            f" {self.shard_fingerprint}, output shard {self.fingerprint})"
        )


@dataclass(frozen=True)
class ShardManifest:
    """What a task returns: small, whatever the shard's size.

    Attributes:
        fingerprint: The output shard's fingerprint.
        computed: Whether this task computed it (False: it was in the store).
        seconds: How long the task took.
        worker: Where it ran (host and pid).
    """

    fingerprint: str
    computed: bool
    seconds: float
    worker: str


def run_shard_task(
    name: str, data: bytes, task: ShardTask, table: pa.Table | None = None
) -> ShardManifest:
    """Compute ``task``'s output shard into the store; ``table``: its input, if not stored."""
    started = time.perf_counter()
    try:
        payload = loads(name, data)
    except Exception as error:
        raise StaleWorkerError(
            f"Worker {_where()} refused {task.describe()}: it cannot load the transform it"
            f" received ({type(error).__name__}: {error}), so its image lacks the driver's code"
            " (a module or package version). Nothing was written. Deploy the driver's code to"
            " the workers and run again."
        ) from error
    _check(name, payload, task)
    store = CacheStore(
        payload.root,
        storage_options=payload.storage_options,
        read_from=payload.read_from,
        read_from_options=payload.read_from_options,
    )
    shard = _input_shard(store, task, table)
    transform = Transform(
        payload.work.transform.name, task.parents, task.fingerprint, payload.work.transform.tree
    )
    rows: list[int] = []
    try:
        computed = payload.work.compute((shard, task.start, transform), store, rows_done=rows)
    except (StaleWorkerError, CacheError):
        raise
    except Exception as error:
        row = task.start + sum(rows)
        raise ShardTaskError(
            f"{payload.work.transform.name} failed on {task.describe()}, in the batch starting"
            f" at row {row}, on worker {_where()}: {type(error).__name__}: {error}. Nothing was"
            " published; fix the function and run again (finished shards are reused)."
        ) from error
    return ShardManifest(task.fingerprint, computed, time.perf_counter() - started, _where())


def _check(name: str, payload: Payload, task: ShardTask) -> None:
    """Refuse work whose recipe hashes, in this process, unlike on the driver."""
    recipe = payload.work.recipe
    if recipe is None or payload.expected_hash is None:
        return
    here = _CHECKED.get(name)
    if here is None:
        here = fingerprint_transform(recipe.parent, recipe.name, recipe.args)[0]
        _CHECKED[name] = here
    if here != payload.expected_hash:
        raise StaleWorkerError(
            f"Worker {_where()} refused {task.describe()}: the {recipe.name} it received hashes"
            f" to {here!r} here but to {payload.expected_hash!r} on the driver, so this worker"
            " would run other code (its image holds another version of the function or of a"
            " module it uses). Nothing was written. Deploy the driver's code to the workers"
            " (same package versions and modules) and run again."
        )


def _input_shard(store: CacheStore, task: ShardTask, table: pa.Table | None) -> Shard:
    if table is not None:
        return Shard(task.shard_fingerprint, table, task.indices)
    assert task.entry_key is not None
    entry = store.lookup(task.entry_key)
    opened = open_table_shard(entry, store) if entry is not None else None
    if opened is None:
        raise CacheError(
            f"The input of {task.describe()} is gone from the store {store.root!r} (entry"
            f" {task.entry_key!r} evicted or damaged since the driver planned the run). Run"
            " the transform again; it recomputes its input."
        )
    read, _ = opened
    return Shard(task.shard_fingerprint, read.rows, task.indices, read.entries, read.table_entry)


def _where() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"
