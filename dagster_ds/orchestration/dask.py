"""DaskResource: the Dask cluster a dataset asset's maps run on, shard by shard.

With ``resources={"dask": DaskResource(...)}`` in the Definitions, every
``map`` and ``filter`` inside a dataset asset's function (and its sharded
streaming exports and pushes) runs its missing shards as tasks on that
cluster (`DaskExecutor`), writing into the asset's store. The asset need not
list ``"dask"`` in ``required_resource_keys``: Dagster has no optional
resource requirement and hands a step only the resources it declares, so the
step finds the resource among its job's resource definitions and initializes
it itself; Definitions without one run locally. The store must then be shared storage every worker
reaches (the IO manager's ``base_dir`` an fsspec URL such as ``s3://...``);
a local path with workers on other hosts gets a `DistributedStorageWarning`.
The shard counts (found in the store, computed) go into the
materialization's metadata and the step's log.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg
from pydantic import PrivateAttr

from dagster_ds.orchestration.metadata import DatasetMetadataKey as Key
from dagster_ds.parallel import ShardCounts, counting_shards

if TYPE_CHECKING:
    from dagster_ds.distributed import DaskExecutor
    from dagster_ds.orchestration.io_manager import DatasetStore

__all__ = ["DaskResource"]

#: The resource key under which a `DaskResource` runs a dataset asset's maps.
DASK_RESOURCE_KEY = "dask"


class DaskResource(dg.ConfigurableResource):
    """A Dask cluster for the maps of dataset assets: a scheduler's address, or a local one.

    Attributes:
        address: The scheduler to connect to (``tcp://scheduler:8786``); None
            starts a local cluster for the step with ``n_workers`` processes.
        n_workers: Worker processes of the local cluster.
        threads_per_worker: Threads per local worker (1 for CPU-bound Python).
        retries: Dask retries per shard task.

    Example:
        >>> import dagster as dg
        >>> from dagster_ds.orchestration import DaskResource, DatasetIOManager
        >>> defs = dg.Definitions(
        ...     resources={
        ...         "io_manager": DatasetIOManager(base_dir="s3://bucket/datasets"),
        ...         "dask": DaskResource(address="tcp://scheduler:8786"),
        ...     },
        ... )
    """

    address: str | None = None
    n_workers: int = 2
    threads_per_worker: int = 1
    retries: int = 0

    _cluster: Any = PrivateAttr(default=None)
    _executor: Any = PrivateAttr(default=None)

    def executor(self) -> DaskExecutor:
        """The executor on this resource's cluster (the local one is started on first use)."""
        if self._executor is None:
            from dagster_ds.distributed import DaskExecutor, import_distributed

            distributed = import_distributed()
            if self.address is not None:
                client = distributed.Client(self.address)
            else:
                self._cluster = distributed.LocalCluster(
                    n_workers=self.n_workers,
                    threads_per_worker=self.threads_per_worker,
                    processes=True,
                    # A free port: the scheduler serves HTTP even without a dashboard,
                    # and 8787 may be another cluster's.
                    dashboard_address=":0",
                )
                client = distributed.Client(self._cluster)
            self._executor = DaskExecutor(client, retries=self.retries)
        return self._executor

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Close the client, and the local cluster if this resource started one."""
        del context
        if self._executor is not None:
            self._executor.client.close()
            self._executor = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


@dataclass
class ShardRun:
    """The shard counts of a step's maps, as materialization metadata."""

    counts: ShardCounts | None = None
    where: str = ""

    def metadata(self) -> dict[str, Any]:
        if self.counts is None:
            return {}
        return {
            Key.SHARDS_CACHED.value: self.counts.cached,
            Key.SHARDS_COMPUTED.value: self.counts.computed,
            Key.SHARDS_ELSEWHERE.value: self.counts.elsewhere,
            Key.EXECUTOR.value: self.where,
        }


@contextmanager
def on_dask(context: dg.AssetExecutionContext, store: DatasetStore | None) -> Iterator[ShardRun]:
    """Run the block's maps on the `DaskResource` of the step's Definitions, if any.

    A step gets the resources its asset requires; a dataset asset does not
    need to require ``dask``: when its job (the Definitions' resources) binds
    a `DaskResource` under that key, the step initializes it for the block
    (`dagster.build_resources`, with the run's config for it; torn down after).
    Without one, the block runs here, as it would without Dagster.
    """
    resource = getattr(context.resources, DASK_RESOURCE_KEY, None)
    if isinstance(resource, DaskResource):
        with _counted(context, resource, store) as run:
            yield run
        return
    definition = context.job_def.resource_defs.get(DASK_RESOURCE_KEY)
    resource_cls = getattr(definition, "configurable_resource_cls", None)
    if not (isinstance(resource_cls, type) and issubclass(resource_cls, DaskResource)):
        yield ShardRun()
        return
    resources = context.run.run_config.get("resources")
    configured = resources.get(DASK_RESOURCE_KEY) if isinstance(resources, Mapping) else None
    with (
        dg.build_resources(
            {DASK_RESOURCE_KEY: definition},
            instance=context.instance,
            resource_config={DASK_RESOURCE_KEY: configured} if configured else None,
        ) as built,
        _counted(context, getattr(built, DASK_RESOURCE_KEY), store) as run,
    ):
        yield run


@contextmanager
def _counted(
    context: dg.AssetExecutionContext, resource: DaskResource, store: DatasetStore | None
) -> Iterator[ShardRun]:
    """The block on ``resource``'s cluster, its shard counts logged and recorded."""
    from dagster_ds.distributed import check_shared_storage

    executor = resource.executor()
    if store is not None and "://" not in store.root:
        check_shared_storage("IO manager's base_dir", store.root, executor.client)
    run = ShardRun(where=repr(executor))
    with executor, counting_shards() as counts:
        yield run
    run.counts = counts
    context.log.info(
        f"Shards on {run.where}: {counts.computed} computed, {counts.cached} found in the store"
        f", {counts.elsewhere} finished by another run meanwhile."
    )
