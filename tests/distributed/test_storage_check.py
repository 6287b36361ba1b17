"""A cache on a local path with cluster workers on other hosts is named, not silently used."""

from __future__ import annotations

from typing import Any

import pytest

from dagster_ds.distributed._executor import check_shared_storage
from dagster_ds.errors import DistributedStorageWarning


class _Scheduler:
    """What `check_shared_storage` asks of a client: the scheduler's view of its workers."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses

    def scheduler_info(self) -> dict[str, Any]:
        return {"workers": {address: {"nthreads": 1} for address in self.addresses}}


def test_a_local_cache_with_workers_on_other_hosts_is_named() -> None:
    with pytest.warns(DistributedStorageWarning, match=r"local path '/data/cache'.*10\.0\.0\.7"):
        check_shared_storage("cache", "/data/cache", _Scheduler("tcp://10.0.0.7:40123"))


def test_a_local_cache_with_local_workers_is_fine() -> None:
    check_shared_storage("cache", "/data/cache", _Scheduler("tcp://127.0.0.1:40123"))


def test_an_export_target_on_a_local_path_with_workers_on_other_hosts_is_named() -> None:
    from dagster_ds.distributed import DaskExecutor

    executor = DaskExecutor(_Scheduler("tcp://10.0.0.7:40123"))
    with pytest.warns(DistributedStorageWarning, match=r"to_parquet target is the local path"):
        executor.check_reach("to_parquet target", "/out/part-{index:05d}.parquet")
    executor.check_reach("to_parquet target", "s3://bucket/part-{index:05d}.parquet")  # a URL
