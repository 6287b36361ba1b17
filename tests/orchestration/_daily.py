"""A daily-partitioned source, a partitioned transform and an unpartitioned reader of all days.

Every function call is logged to ``$DAGSTER_DS_TEST_CALLS`` (see `_chain`), with
the partition it ran for; the reader's map logs each row it processes, so a
test sees which shards were computed again. ``python -m tests.orchestration._daily
KEY DATA STORE`` materializes one partition on ``$DAGSTER_HOME``'s instance (the
concurrency test runs two at once).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from dagster_ds import Dataset
from dagster_ds.orchestration import DatasetIOManager, dataset_asset, dataset_source
from tests.orchestration._chain import record

START = "2024-01-01"
# While set, each call of `cleaned` waits (up to 60 s) until this folder holds a file per
# partition being materialized: two runs are then inside the transform at the same time.
BARRIER_ENV = "DAGSTER_DS_TEST_BARRIER"


def mark(row: dict[str, Any]) -> dict[str, Any]:
    record(f"row:{row['id']}")
    return {"length": len(row["text"])}


@dataclass
class Daily:
    days: dg.DailyPartitionsDefinition
    docs: dg.SourceAsset
    cleaned: dg.AssetsDefinition
    lengths: dg.AssetsDefinition
    _jobs: dict[str, dg.JobDefinition] = field(default_factory=dict[str, dg.JobDefinition])

    @property
    def all(self) -> list[Any]:
        return [self.docs, self.cleaned, self.lengths]

    def run(
        self,
        instance: dg.DagsterInstance,
        store: str,
        asset: dg.AssetsDefinition | dg.SourceAsset,
        partition: str | None = None,
    ) -> dg.ExecuteInProcessResult:
        """Materialize (observe) ``asset`` (one ``partition``) in a real run on ``instance``."""
        if store not in self._jobs:
            resources = {"io_manager": DatasetIOManager(base_dir=store)}
            definitions = dg.Definitions(assets=self.all, resources=resources)
            self._jobs[store] = definitions.resolve_implicit_global_asset_job_def()
        result = self._jobs[store].execute_in_process(
            instance=instance, partition_key=partition, asset_selection=[asset.key]
        )
        assert result.success
        return result


def build(data: Path, end: str) -> Daily:
    """docs (a file per day in ``data``) -> cleaned (daily) -> lengths (all days, unpartitioned)."""
    days = dg.DailyPartitionsDefinition(start_date=START, end_date=end)
    docs = dataset_source(
        "docs", "json", data_files=str(data / "{partition_key}.jsonl"), partitions_def=days
    )

    @dataset_asset(partitions_def=days)
    def cleaned(context: dg.AssetExecutionContext, docs: Dataset) -> Dataset:
        record(f"cleaned:{context.partition_key}")
        _wait_for_the_other_runs(context.partition_key)
        return docs.map(lambda row: {"text": row["text"].strip().lower()})

    @dataset_asset
    def lengths(cleaned: Dataset) -> Dataset:
        record("lengths")
        return cleaned.map(mark)

    return Daily(days, docs, cleaned, lengths)


def _wait_for_the_other_runs(partition: str) -> None:
    folder = os.environ.get(BARRIER_ENV)
    if not folder:
        return
    barrier = Path(folder)
    (barrier / partition).touch()
    deadline = time.monotonic() + 60
    expected = int((barrier / "expected").read_text())
    while len(list(barrier.glob("20*"))) < expected and time.monotonic() < deadline:
        time.sleep(0.05)


if __name__ == "__main__":
    partition, data_dir, store_dir, end_date = sys.argv[1:5]
    with dg.DagsterInstance.get() as dagster_instance:
        daily = build(Path(data_dir), end_date)
        daily.run(dagster_instance, store_dir, daily.cleaned, partition)
