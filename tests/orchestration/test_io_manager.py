"""DatasetIOManager: by fingerprint, shared by processes, on local folders and on S3."""

from __future__ import annotations

import gc
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from dagster_ds import Dataset
from dagster_ds.errors import DatasetNotStoredError
from dagster_ds.orchestration import DatasetIOManager, DatasetStore
from tests.orchestration._chain import build
from tests.orchestration.conftest import data_version, latest, metadata_value

CHAIN = ["cleaned", "tokens", "counts"]


def _save(args: tuple[str, str]) -> int:
    source, base = args
    store = DatasetStore(base)
    return store.save(dg.AssetKey("shared"), Dataset.load_from_disk(source)).bytes_written


def test_processes_storing_one_fingerprint_at_once_store_it_once(tmp_path: Path) -> None:
    dataset = Dataset.from_dict({"text": [f"row {i}" for i in range(20_000)]})
    dataset.save_to_disk(str(tmp_path / "source"))
    with ProcessPoolExecutor(4) as pool:
        written = list(pool.map(_save, [(str(tmp_path / "source"), str(tmp_path / "base"))] * 8))
    assert sum(1 for count in written if count > 0) >= 1
    assert sorted(written)[:-1] == [0] * 7  # one process wrote the rows, the others reused them
    assert not any((tmp_path / "base" / "tmp").iterdir())  # no staging left behind
    store = DatasetStore(str(tmp_path / "base"))
    assert store.cache.verify().ok
    loaded = store.load(dg.AssetKey("shared"), dataset.fingerprint)
    assert loaded.fingerprint == dataset.fingerprint
    assert loaded["text"][19_999] == "row 19999"


def test_loads_are_memory_mapped(tmp_path: Path) -> None:
    dataset = Dataset.from_dict({"text": ["x" * 1000] * 10_000})  # 10 MB
    store = DatasetStore(str(tmp_path))
    store.save(dg.AssetKey("big"), dataset)
    before = pa.total_allocated_bytes()
    loaded = store.load(dg.AssetKey("big"), dataset.fingerprint)
    assert loaded.num_rows == 10_000
    assert pa.total_allocated_bytes() - before < 1_000_000


def test_loading_what_was_never_stored_says_what_to_do(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    chain = build(str(corpus))
    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))}
    defs = dg.Definitions(assets=chain.all, resources=resources)
    with pytest.raises(DatasetNotStoredError, match="'cleaned' has no materialization"):
        defs.load_asset_value("cleaned", instance=instance)
    assert dg.materialize(chain.all, instance=instance, resources=resources).success
    fingerprint = metadata_value(latest(instance, "cleaned"), "dagster_ds/recipe")
    version = Path(metadata_value(latest(instance, "cleaned"), "dagster_ds/path"))
    (version / "manifest.json").unlink()
    with pytest.raises(DatasetNotStoredError, match=f"fingerprint '{fingerprint}' is not stored"):
        defs.load_asset_value("cleaned", instance=instance)


# -- object storage ---------------------------------------------------------------


def test_an_s3_base_dir(
    s3_endpoint: str,
    instance: dg.DagsterInstance,
    corpus: Path,
    body_calls: Callable[[], list[str]],
) -> None:
    import s3fs

    chain = build(str(corpus))
    options = {"endpoint_url": s3_endpoint, "key": "testing", "secret": "testing"}
    resources = {
        "io_manager": DatasetIOManager(base_dir="s3://datasets/pipeline", storage_options=options)
    }
    for _ in range(2):
        assert dg.materialize(
            chain.all, instance=instance, resources=resources, selection=chain.all
        ).success
    assert body_calls() == CHAIN
    assert metadata_value(latest(instance, "counts"), "dagster_ds/cache") == "hit"

    s3 = s3fs.S3FileSystem(endpoint_url=s3_endpoint, skip_instance_cache=True)
    path = metadata_value(latest(instance, "counts"), "dagster_ds/path")
    assert path.startswith("s3://datasets/pipeline/objects/")
    assert s3.exists(f"{path.removeprefix('s3://')}/manifest.json")
    loaded = dg.Definitions(assets=chain.all, resources=resources).load_asset_value(
        "counts", instance=instance
    )
    assert isinstance(loaded, Dataset)
    assert loaded.fingerprint == data_version(instance, "counts")
    assert loaded["num_tokens"][:] == [2, 4]
    del loaded  # its reader leases live on the S3 server, which stops after the test
    gc.collect()


def test_streaming_assets_are_stored_and_read_back_as_streams(
    tmp_path: Path, instance: dg.DagsterInstance, corpus: Path, body_calls: Callable[[], list[str]]
) -> None:
    from dagster_ds.orchestration import dataset_asset, dataset_source
    from dagster_ds.streaming import IterableDataset
    from tests.orchestration._chain import record

    docs = dataset_source("docs", "json", data_files=str(corpus), streaming=True)
    seen: list[type] = []

    @dataset_asset
    def shouted(docs: IterableDataset) -> IterableDataset:
        record("shouted")
        seen.append(type(docs))
        return docs.map(lambda example: {"text": example["text"].upper()})

    @dataset_asset
    def short(shouted: IterableDataset) -> IterableDataset:
        record("short")
        seen.append(type(shouted))
        return shouted.filter(lambda example: len(example["text"]) < 15)

    assets = [docs, shouted, short]
    resources = {"io_manager": DatasetIOManager(base_dir=str(tmp_path / "storage"))}
    for _ in range(2):
        assert dg.materialize(
            assets, instance=instance, resources=resources, selection=assets
        ).success
    assert body_calls() == ["shouted", "short"]
    assert seen == [IterableDataset, IterableDataset]
    materialization = latest(instance, "short")
    assert metadata_value(materialization, "dagster/row_count") == 2
    assert metadata_value(materialization, "dagster_ds/cache") == "hit"
    assert "| HELLO WORLD |" in metadata_value(materialization, "dagster_ds/preview")

    loaded = dg.Definitions(assets=assets, resources=resources).load_asset_value(
        "short", instance=instance
    )
    assert isinstance(loaded, IterableDataset)
    assert loaded.fingerprint == data_version(instance, "short")
    assert [row["text"] for row in loaded] == ["HELLO WORLD", "X"]
