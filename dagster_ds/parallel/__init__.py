"""Where work runs: in this process, forked workers, or an executor elsewhere (a cluster).

The executor seam shared by map and filter (`dagster_ds.arrow`), streaming
exports (`dagster_ds.streaming`), pushes (`dagster_ds.hub`) and the Dask
executor (`dagster_ds.distributed`).

Example:
    >>> from dagster_ds.parallel import in_processes
    >>> list(in_processes(lambda n: n * n, [1, 2, 3], 2, what=str))
    [1, 4, 9]
"""

from dagster_ds.parallel._executor import LocalProcesses as LocalProcesses
from dagster_ds.parallel._executor import Sealed as Sealed
from dagster_ds.parallel._executor import ShardCounts as ShardCounts
from dagster_ds.parallel._executor import ShardExecutor as ShardExecutor
from dagster_ds.parallel._executor import Work as Work
from dagster_ds.parallel._executor import counting_shards as counting_shards
from dagster_ds.parallel._executor import current_executor as current_executor
from dagster_ds.parallel._executor import record_counts as record_counts
from dagster_ds.parallel._executor import remote_executor as remote_executor
from dagster_ds.parallel._executor import run_sealed as run_sealed
from dagster_ds.parallel._forked import in_processes as in_processes

__all__ = [
    "LocalProcesses",
    "Sealed",
    "ShardCounts",
    "ShardExecutor",
    "Work",
    "counting_shards",
    "current_executor",
    "in_processes",
    "record_counts",
    "remote_executor",
    "run_sealed",
]
