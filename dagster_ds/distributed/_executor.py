"""DaskExecutor: a transform's missing output shards as tasks on a Dask cluster."""

from __future__ import annotations

import contextlib
import importlib
import ipaddress
import itertools
import socket
import warnings
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, TypeVar

from dagster_ds.arrow import Piece, ShardWork
from dagster_ds.cache import CacheStore, current_root
from dagster_ds.distributed._payload import Payload, digest, dumps
from dagster_ds.distributed._task import ShardManifest, ShardTask, run_shard_task
from dagster_ds.errors import (
    DagsterDsError,
    DistributedStorageWarning,
    InvalidArgumentError,
    MissingExtraError,
    ShardTaskError,
    StaleWorkerError,
    WorkerDiedError,
)
from dagster_ds.fingerprint import fingerprint_transform
from dagster_ds.parallel import ShardCounts, ShardExecutor, Work
from dagster_ds.progress import progress_bar

Item = TypeVar("Item")
Result = TypeVar("Result")
Pending = TypeVar("Pending")

#: The first element of every shard task's key; the second is the output shard fingerprint.
TASK_PREFIX = "dagster_ds-shard"


def import_distributed() -> Any:
    """The ``distributed`` module, or a `MissingExtraError` saying how to install it."""
    try:
        return importlib.import_module("distributed")
    except ImportError as error:
        raise MissingExtraError(
            "dagster_ds.distributed needs dask's distributed scheduler, which is not installed:"
            " pip install 'dagster-ds[dask]'"
        ) from error


class DaskExecutor(ShardExecutor):
    """Runs a transform's shards as tasks on a Dask cluster, through the shared cache.

    The driver (this process) plans every output shard's fingerprint and
    submits a task only for those the cache lacks, keyed by that fingerprint
    (so identical work is one task, across drivers too). Each task reads its
    input shard from the cache through fsspec, checks that the function it
    received hashes to the driver's transform hash (else `StaleWorkerError`),
    and writes the output shard with `CacheStore.get_or_create`. The driver
    then builds the dataset from those entries: nothing is published when a
    task fails, and a rerun computes only the shards still missing.

    The cache must be storage every worker reaches (any fsspec URL, e.g.
    ``s3://bucket/cache`` via ``DAGSTER_DS_CACHE``); a local path with workers
    on other hosts gets a `DistributedStorageWarning`.

    Args:
        client: A ``distributed.Client`` to use (it stays open).
        address: A scheduler address to connect to (the client is closed on
            `close` / at the end of the ``with`` block). Neither: ``Client()``,
            which starts a local cluster.
        retries: Dask retries per task (a task whose worker dies is also
            rescheduled by Dask, up to its ``allowed-failures``).
        max_tasks_in_flight: Tasks submitted at once (default: 4 per worker
            thread, at least 8); the rest wait on the driver.
        desc: The progress bar's label (a tqdm bar on a terminal).

    Attributes:
        counts: Shards found in the cache and computed, summed over the calls run.

    Example:
        >>> from dagster_ds import Dataset
        >>> from dagster_ds.distributed import DaskExecutor
        >>> with DaskExecutor(address="tcp://127.0.0.1:8786"):  # doctest: +SKIP
        ...     Dataset.from_dict({"a": [1, 2]}).map(lambda x: {"b": x["a"] * 2})
    """

    remote = True

    def __init__(
        self,
        client: Any | None = None,
        address: str | None = None,
        *,
        retries: int = 0,
        max_tasks_in_flight: int | None = None,
        desc: str = "Shards on Dask",
    ) -> None:
        if client is not None and address is not None:
            raise InvalidArgumentError(
                "DaskExecutor(client=..., address=...): give one of them, not both."
            )
        if retries < 0 or (max_tasks_in_flight is not None and max_tasks_in_flight < 1):
            raise InvalidArgumentError(
                f"DaskExecutor(retries={retries!r}, max_tasks_in_flight={max_tasks_in_flight!r}):"
                " retries must be >= 0 and max_tasks_in_flight >= 1."
            )
        import_distributed()
        self._client = client
        self._address = address
        self._owns_client = client is None
        self.retries = retries
        self.max_tasks_in_flight = max_tasks_in_flight
        self.desc = desc
        self.counts = ShardCounts()
        self._checked_storage: set[str] = set()

    # -- the client -----------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The ``distributed.Client`` (connected on first use)."""
        if self._client is None:
            distributed = import_distributed()
            self._client = (
                distributed.Client(self._address)
                if self._address is not None
                else distributed.Client(dashboard_address=None)
            )
        return self._client

    def close(self) -> None:
        """Close the client if this executor opened it."""
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        if not self.active:
            self.close()

    def __repr__(self) -> str:
        where = self._address or (self._client.scheduler.address if self._client else "local")
        return f"DaskExecutor({where!r})"

    # -- running --------------------------------------------------------------------------

    def compute(
        self, work: Work, missing: Sequence[Piece], store: CacheStore, workers: int
    ) -> ShardCounts:
        """Compute ``missing`` on the cluster; see the class docstring."""
        del workers  # the cluster's size decides
        if not isinstance(work, ShardWork):
            raise TypeError(f"DaskExecutor computes shards of map-style datasets, not {work!r}")
        client = self.client
        self._check_storage(store, client)
        root, options = _location(store)
        expected = (
            fingerprint_transform(work.recipe.parent, work.recipe.name, work.recipe.args)[0]
            if work.recipe is not None
            else None
        )
        layers = (store.read_from, store.read_from_options)
        data = dumps(Payload(work, expected, root, options, *layers))
        name = digest(data)
        # On every worker: a worker that dies does not take the only copy with it.
        [shared] = client.scatter([data], hash=False, broadcast=True)
        counts = ShardCounts()
        tasks = _tasks(missing, store)
        distributed = import_distributed()

        def submit(chunk: list[tuple[ShardTask, Any]]) -> list[Any]:
            return client.map(
                run_shard_task,
                [name] * len(chunk),
                [shared] * len(chunk),
                [task for task, _ in chunk],
                _scattered(client, [table for _, table in chunk]),
                key=[(TASK_PREFIX, task.fingerprint) for task, _ in chunk],
                retries=self.retries,
                pure=False,
            )

        try:
            with (
                progress_bar(len(tasks), self.desc, unit=" shards") as bar,
                contextlib.closing(self._in_flight(tasks, submit, with_results=True)) as done,
            ):
                for (task, _), future, result in done:
                    manifest = (
                        result
                        if isinstance(result, ShardManifest)
                        else _result(future, task, distributed)  # raises what failed
                    )
                    counts.computed += manifest.computed
                    counts.elsewhere += not manifest.computed
                    bar.update(1)
        finally:
            shared.release()
        return counts

    def _in_flight(
        self,
        items: Sequence[Pending],
        submit: Callable[[list[Pending]], list[Any]],
        *,
        with_results: bool,
    ) -> Generator[tuple[Pending, Any, Any]]:
        """Yield ``(item, future, result or None)`` for each of ``items`` as it completes.

        They are submitted in chunks, at most `max_tasks_in_flight` at a time, refilled
        when half are done. Closing the generator (on the caller's error too) cancels
        what is left.
        """
        client = self.client
        limit = self.max_tasks_in_flight or max(8, 4 * _threads(client))
        queue = iter(items)
        owners: dict[Any, Pending] = {}
        # On this client's event loop: without ``loop=``, Dask awaits the futures (and
        # gathers their results) on the default client's loop, another thread's, which
        # then writes to this client's connections concurrently with its own thread.
        pending = import_distributed().as_completed(
            loop=client.loop, with_results=with_results, raise_errors=False
        )

        def refill(count: int) -> None:
            chunk = list(itertools.islice(queue, count))
            if chunk:
                submitted = submit(chunk)  # one message to the scheduler
                owners.update(zip(submitted, chunk, strict=True))
                pending.update(submitted)

        refill(limit)
        try:
            for done in pending:
                future, result = done if with_results else (done, None)
                yield owners.pop(future), future, result
                future.release()
                if len(owners) <= limit // 2:
                    refill(limit - len(owners))
        except BaseException:
            if owners:
                client.cancel(list(owners))
            raise

    def check_reach(self, what: str, path: str) -> None:
        """Warn (`DistributedStorageWarning`) when ``path`` is local and workers are not."""
        if "://" not in path and path not in self._checked_storage:
            self._checked_storage.add(path)
            check_shared_storage(what, path, self.client)

    def run_calls(
        self,
        function: Callable[[Item], Result],
        items: Sequence[Item],
        *,
        what: Callable[[Item], str],
        on_done: Callable[[Result], object] | None = None,
    ) -> list[Result]:
        """``function`` over ``items`` as tasks on the cluster (bounded in flight), in order.

        A call that fails cancels the others and raises an error naming its
        item (our own errors as they are); Dask's ``retries`` apply.
        """
        client = self.client
        distributed = import_distributed()
        results: dict[int, Result] = {}

        def submit(chunk: list[tuple[int, Item]]) -> list[Any]:
            return client.map(
                function, [item for _, item in chunk], retries=self.retries, pure=False
            )

        with contextlib.closing(
            self._in_flight(list(enumerate(items)), submit, with_results=False)
        ) as done:
            for (index, item), future, _ in done:
                results[index] = _call_result(future, what(item), distributed)
                if on_done is not None:
                    on_done(results[index])
        return [results[index] for index in range(len(items))]

    def record(self, counts: ShardCounts) -> None:
        """Add a call's counts to `counts`."""
        self.counts.add(counts)

    def _check_storage(self, store: CacheStore, client: Any) -> None:
        if store.is_local and store.root not in self._checked_storage:
            self._checked_storage.add(store.root)
            check_shared_storage("cache", store.root, client)


def check_shared_storage(what: str, root: str, client: Any) -> None:
    """Warn that the local path ``root`` (the ``what``) is out of reach of remote workers."""
    remote = remote_workers(client)
    if remote:
        warnings.warn(
            f"The {what} is the local path {root!r}, but Dask workers run on other hosts"
            f" ({', '.join(sorted(remote)[:3])}): they cannot read or write it unless it is a"
            " mount they all share. Put it on storage every worker reaches, any fsspec URL:"
            " s3://bucket/path (DAGSTER_DS_CACHE for the cache, base_dir for the IO manager).",
            DistributedStorageWarning,
            stacklevel=4,
        )


def remote_workers(client: Any) -> set[str]:
    """The hosts of the client's workers that are not this machine."""
    local = {"localhost", socket.gethostname()}
    with contextlib.suppress(OSError):
        local |= set(socket.gethostbyname_ex(socket.gethostname())[2])
    hosts: set[str] = set()
    for address in client.scheduler_info().get("workers", {}):
        host = str(address).split("://")[-1].rsplit(":", 1)[0].strip("[]")
        try:
            if ipaddress.ip_address(host).is_loopback:
                continue
        except ValueError:
            pass
        if host not in local:
            hosts.add(host)
    return hosts


def _scattered(client: Any, tables: Sequence[Any]) -> list[Any]:
    """The input tables of a chunk of tasks on the cluster, sent in one round trip.

    None stays None (that task reads its input from the store).
    """
    present = [table for table in tables if table is not None]
    sent = iter(client.scatter(present, hash=False) if present else ())
    return [next(sent) if table is not None else None for table in tables]


def _threads(client: Any) -> int:
    workers: Mapping[str, Any] = client.scheduler_info().get("workers", {})
    return sum(int(info.get("nthreads", 1)) for info in workers.values()) or 1


def _location(store: CacheStore) -> tuple[str, Mapping[str, object] | None]:
    """Where workers find ``store``: its root, and the storage options it was opened with."""
    chosen = current_root()
    if chosen is not None and chosen[0] == store.root:
        return chosen[0], dict(chosen[1]) if chosen[1] else None
    return store.root, None


def _tasks(missing: Sequence[Piece], store: CacheStore) -> list[tuple[ShardTask, Any]]:
    """One task per missing piece, and its input table when it is not in the store."""
    tasks: list[tuple[ShardTask, Any]] = []
    for shard, start, transform in missing:
        entry = shard.table_entry
        stored = entry is not None and store.holds(entry)
        task = ShardTask(
            fingerprint=transform.fingerprint,
            parents=transform.parents,
            shard_fingerprint=shard.fingerprint,
            entry_key=entry.key if stored and entry is not None else None,
            indices=shard.indices,
            start=start,
            num_rows=shard.num_rows,
        )
        tasks.append((task, None if stored else shard.table))
    return tasks


def _call_result(future: Any, what: str, distributed: Any) -> Any:
    """A call's result; its failure as our error (as raised, or naming ``what``)."""
    try:
        return future.result()
    except DagsterDsError:
        future.release()
        raise
    except distributed.KilledWorker as error:
        future.release()
        raise WorkerDiedError(
            f"Dask workers died while computing {what} (killed, crashed or out of memory) more"
            " often than the scheduler allows (distributed.scheduler.allowed-failures)."
        ) from error
    except Exception as error:
        future.release()
        raise ShardTaskError(
            f"The task for {what} failed on the cluster: {type(error).__name__}: {error}"
        ) from error


def _result(future: Any, task: ShardTask, distributed: Any) -> ShardManifest:
    """The task's manifest; its failure as an error naming the shard.

    A failed task's key is released at once: the scheduler then forgets its
    error, so a rerun submitting the same key runs the task again.
    """
    try:
        manifest = future.result()
    except (ShardTaskError, StaleWorkerError):
        future.release()
        raise
    except distributed.KilledWorker as error:
        future.release()
        raise WorkerDiedError(
            f"Dask workers died while computing {task.describe()} (killed, crashed or out of"
            " memory) more often than the scheduler allows (distributed.scheduler."
            "allowed-failures). Nothing was published; run again to compute only the shards"
            " still missing."
        ) from error
    except Exception as error:
        future.release()
        raise ShardTaskError(
            f"The task for {task.describe()} failed: {type(error).__name__}: {error}. Nothing"
            " was published; run again to compute only the shards still missing."
        ) from error
    assert isinstance(manifest, ShardManifest)
    return manifest
