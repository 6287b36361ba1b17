"""A refresh of a source on S3, a map and a filter stored on S3, run as its own process.

``python -m tests.orchestration._s3_refresh ENDPOINT`` materializes it in the
instance of ``$DAGSTER_HOME`` and prints the data versions it recorded as JSON.
With ``$DAGSTER_DS_TEST_SLOW_MAP`` set to a path, the map touches that file and
then takes its time over each batch (so the process can be killed mid-run).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source

SLOW_ENV = "DAGSTER_DS_TEST_SLOW_MAP"


def lower(batch: dict[str, list[str]]) -> dict[str, list[str]]:
    marker = os.environ.get(SLOW_ENV)
    if marker:
        with open(marker, "a", encoding="utf-8") as file:
            file.write("batch\n")
        time.sleep(0.5)
    return {"text": [text.lower() for text in batch["text"]]}


def pipeline(endpoint: str) -> tuple[list[Any], dict[str, Any]]:
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
    docs = dataset_source(
        "docs",
        "json",
        data_files="s3://datasets/src/*.jsonl",
        storage_options={**options, "skip_instance_cache": True},
    )

    @dataset_asset
    def lowered(docs: Dataset) -> Dataset:
        return docs.map(lower, batched=True)

    @dataset_asset
    def short(lowered: Dataset) -> Dataset:
        return lowered.filter(lambda row: int(row["text"].split()[2]) < 10)

    # A store per server: a process's usage record follows a store's URL, not its endpoint.
    root = f"s3://datasets/store-{endpoint.rsplit(':', 1)[-1]}"
    resources = {"io_manager": DatasetIOManager(base_dir=root, storage_options=options)}
    return [docs, lowered, short], resources


def main(endpoint: str) -> None:
    assets, resources = pipeline(endpoint)
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(assets, instance=instance, resources=resources)
        assert result.success
        versions = {
            event.materialization.asset_key.to_user_string(): (
                event.materialization.tags or {}
            ).get("dagster/data_version")
            for event in result.get_asset_materialization_events()
        }
        print(json.dumps(versions), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
