"""A dataset asset whose Definitions bind a DaskResource runs its maps on that cluster."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from dagster_ds import Dataset
from dagster_ds.orchestration import (
    DaskResource,
    DatasetIOManager,
    DatasetMetadataKey,
    dataset_asset,
    dataset_source,
)
from tests.distributed import _functions
from tests.distributed._functions import double, logged, logged_in, pids
from tests.distributed.conftest import ROWS_PER_FILE, S3, write_files

# The tests count shards the cluster computes: one per file (not grouped).
ONE_SHARD_PER_FILE = {"shard_bytes": 0}


@pytest.mark.slow  # a Dask cluster started inside a Dagster step
def test_a_dataset_asset_maps_on_the_dask_resource_into_s3(
    cluster: Any, client: Any, s3: S3, tmp_path: Path, dagster_home: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    log = str(tmp_path / "calls.log")
    parts = dataset_source("parts", "json", data_files=files, reader_options=ONE_SHARD_PER_FILE)

    @dataset_asset(required_resource_keys={"dask"})
    def doubled(parts: Dataset) -> Dataset:
        return parts.map(double, batched=True, fn_kwargs={"log": log})

    resources = {
        "io_manager": DatasetIOManager(base_dir=s3.new_url(), storage_options=s3.options),
        "dask": DaskResource(address=cluster.scheduler_address),
    }
    with dg.instance_for_test(temp_dir=str(dagster_home)) as instance:
        result = dg.materialize([parts, doubled], instance=instance, resources=resources)
        assert result.success
        event = instance.get_latest_materialization_event(dg.AssetKey("doubled"))
        assert event is not None
        assert event.asset_materialization is not None
        metadata = event.asset_materialization.metadata
        logs = [
            record.user_message
            for record in instance.all_logs(result.run_id)
            if "Shards on DaskExecutor" in record.user_message
        ]
    assert metadata[DatasetMetadataKey.SHARDS_COMPUTED.value].value == 3
    assert metadata[DatasetMetadataKey.SHARDS_CACHED.value].value == 0
    assert logs
    assert "3 computed, 0 found in the store" in logs[0]
    assert sorted(logged(log)) == [i * ROWS_PER_FILE for i in range(3)]
    workers = set(client.run(os.getpid).values())
    assert pids(log) <= workers
    assert os.getpid() not in pids(log)


def _assets(files: list[str], log: str) -> list[Any]:
    parts = dataset_source("parts", "json", data_files=files, reader_options=ONE_SHARD_PER_FILE)

    @dataset_asset  # no required_resource_keys: the Definitions decide where it runs
    def evens_doubled(parts: Dataset) -> Dataset:
        evens = parts.filter(_functions.keep_even, batched=True, fn_kwargs={"log": log})
        return evens.map(double, batched=True, fn_kwargs={"log": log})

    return [parts, evens_doubled]


def _materialize(assets: list[Any], resources: dict[str, Any], home: Path) -> dict[str, Any]:
    """Materialize on a persistent instance; the metadata of the last asset."""
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        result = dg.materialize(assets, instance=instance, resources=resources)
        assert result.success
        event = instance.get_latest_materialization_event(dg.AssetKey("evens_doubled"))
        assert event is not None
        assert event.asset_materialization is not None
        return dict(event.asset_materialization.metadata)


@pytest.mark.slow  # a Dask client made and closed in a step
def test_a_dask_resource_in_the_definitions_runs_an_asset_that_does_not_require_it(
    cluster: Any, client: Any, tmp_path: Path, dagster_home: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    log = str(tmp_path / "dask.log")
    metadata = _materialize(
        _assets(files, log),
        {
            "io_manager": DatasetIOManager(base_dir=str(tmp_path / "store-dask")),
            "dask": DaskResource(address=cluster.scheduler_address),
        },
        dagster_home,
    )
    # 3 filter shards and 3 map shards, all on the cluster's workers
    assert metadata[DatasetMetadataKey.SHARDS_COMPUTED.value].value == 6
    assert sorted(logged(log)) == sorted([0, 10, 20] * 2)
    assert pids(log) <= set(client.run(os.getpid).values())

    # The same Definitions without a DaskResource: the step runs here, with the same result.
    local = _materialize(
        _assets(files, log),
        {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "store-local"))},
        dagster_home,
    )
    assert DatasetMetadataKey.SHARDS_COMPUTED.value not in local
    assert sorted(logged_in(log, {os.getpid()})) == sorted([0, 10, 20] * 2)
    fingerprint = DatasetMetadataKey.RECIPE.value
    assert local[fingerprint].value == metadata[fingerprint].value


@pytest.mark.slow  # a local Dask cluster started and closed inside a step
def test_a_dask_resource_without_an_address_starts_a_local_cluster_for_the_step(
    tmp_path: Path, dagster_home: Path
) -> None:
    import psutil

    files = write_files(tmp_path / "data", 3)
    log = str(tmp_path / "dask.log")
    metadata = _materialize(
        _assets(files, log),
        {
            "io_manager": DatasetIOManager(base_dir=str(tmp_path / "store")),
            "dask": DaskResource(n_workers=1),
        },
        dagster_home,
    )
    assert metadata[DatasetMetadataKey.SHARDS_COMPUTED.value].value == 6
    assert sorted(logged(log)) == sorted([0, 10, 20] * 2)
    assert os.getpid() not in pids(log)  # the local cluster's worker ran them
    assert len(pids(log)) == 1  # its one worker process
    after = {child.pid for child in psutil.Process().children(recursive=True)}
    assert not pids(log) & after  # the cluster was closed with the step
