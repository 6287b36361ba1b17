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
from tests.distributed._functions import double, logged, pids
from tests.distributed.conftest import ROWS_PER_FILE, S3, write_files


@pytest.mark.slow  # a Dask cluster started inside a Dagster step
def test_a_dataset_asset_maps_on_the_dask_resource_into_s3(
    cluster: Any, client: Any, s3: S3, tmp_path: Path, dagster_home: Path
) -> None:
    files = write_files(tmp_path / "data", 3)
    log = str(tmp_path / "calls.log")
    parts = dataset_source("parts", "json", data_files=files)

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
