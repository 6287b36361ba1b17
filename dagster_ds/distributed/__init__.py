"""Shard tasks on a Dask cluster: one transform spread over many machines.

A map-style dataset is a list of shards, each cached under its own
fingerprint; `DaskExecutor` computes a map's missing output shards as Dask
tasks keyed by those fingerprints, through a cache every worker reaches (any
fsspec URL). Needs the optional extra: ``pip install 'dagster-ds[dask]'``;
``import dagster_ds`` never imports dask.

Example:
    >>> from dagster_ds import Dataset
    >>> from dagster_ds.distributed import DaskExecutor
    >>> with DaskExecutor(address="tcp://scheduler:8786"):  # doctest: +SKIP
    ...     doubled = Dataset.from_dict({"a": [1, 2]}).map(lambda x: {"b": x["a"] * 2})
"""

from dagster_ds.distributed._executor import DaskExecutor as DaskExecutor

# Internal: for the other dagster_ds packages only; not public API.
from dagster_ds.distributed._executor import check_shared_storage as check_shared_storage
from dagster_ds.distributed._executor import import_distributed as import_distributed
from dagster_ds.parallel import ShardCounts as ShardCounts

__all__ = ["DaskExecutor", "ShardCounts"]

#: Names other dagster_ds packages import from here; not public API (may change).
__internal__ = [
    "check_shared_storage",
    "import_distributed",
]
