"""A dataset source loads into the run's dataset store, never into a folder of one machine.

Under a distributed executor every step may run on another machine: with the store
on a shared URL, a source observed or read on one machine must be in that store,
not in the instance's local storage folder or the machine's default cache.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from dagster_ds.cache import CacheStore
from dagster_ds.orchestration import DatasetIOManager
from tests.orchestration._chain import build


def test_sources_load_into_the_configured_store(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    chain = build(str(corpus))
    store = tmp_path / "shared-store"
    resources = {"io_manager": DatasetIOManager(base_dir=str(store))}
    for _ in range(2):  # the source observed, then read by its consumer, in both runs
        assert dg.materialize(
            chain.all, instance=instance, resources=resources, selection=chain.all
        ).success
    assert body_calls() == ["cleaned", "tokens", "counts"]  # the second run: all hits

    local = Path(instance.storage_directory()) / "dagster_ds"
    assert not local.exists(), sorted(p.name for p in local.rglob("*"))
    assert CacheStore(os.environ["DAGSTER_DS_CACHE"]).ls() == []  # the machine's own cache
    kinds = [info.metadata.get("kind") for info in CacheStore(str(store)).ls()]
    assert "table" in kinds  # the source's rows, loaded once, referenced by the assets


def test_without_a_dataset_store_a_source_loads_into_the_instances(
    instance: dg.DagsterInstance, corpus: Path
) -> None:
    chain = build(str(corpus))
    assert dg.materialize([chain.docs], instance=instance, selection=[chain.docs]).success
    local = CacheStore(os.path.join(instance.storage_directory(), "dagster_ds"))
    assert local.ls() != []
