"""Stored versions: one manifest read to open, describe or check one, whatever its shard count."""

from __future__ import annotations

import gc
import json
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from dagster_ds import Dataset, concatenate_datasets
from dagster_ds.cache import CacheCorruptionWarning, cache_root
from dagster_ds.errors import DatasetNotStoredError
from dagster_ds.orchestration import DatasetStore
from tests.conftest import s3_requests

KEY = dg.AssetKey("parts")


def _pipeline(store: DatasetStore, shards: int) -> Dataset:
    """``shards`` shards, mapped then filtered in ``store``: each references 3 entries."""
    parts = [Dataset.from_dict({"n": [10 * i + j for j in range(10)]}) for i in range(shards)]
    with cache_root(store.root, store.storage_options):
        whole = concatenate_datasets(parts).map(lambda row: {"m": row["n"] * 2})
        return whole.filter(lambda row: row["n"] % 3 != 0)


def _methods(lines: list[tuple[str, int]]) -> Counter[str]:
    return Counter(method for method, _ in lines)


@pytest.mark.parametrize("shards", [3, 12])
def test_opening_describing_and_checking_a_version_on_s3_reads_its_manifest_once(
    s3_endpoint: str, shards: int
) -> None:
    options = {"endpoint_url": s3_endpoint, "key": "testing", "secret": "testing"}
    store = DatasetStore(f"s3://datasets/store-{shards}", options)
    dataset = _pipeline(store, shards)
    expected = dataset["m"][:]
    stored = store.save(KEY, dataset)
    fresh = DatasetStore(f"s3://datasets/store-{shards}", options)  # nothing remembered in-process
    with s3_requests() as requests:
        assert fresh.contains(KEY, dataset.fingerprint)
    # Its manifest, and one listing of the store's root (is any entry quarantined? once
    # per process and minute), whatever the shards.
    assert _methods(requests.made()) == {"GET": 2}
    assert sum("list-type=" in line for line in requests.lines) == 1
    with s3_requests() as requests:
        assert fresh.describe(KEY, dataset.fingerprint).size == stored.size > 0
    assert _methods(requests.made()) == {"GET": 1}
    with s3_requests() as requests:
        loaded = fresh.load(KEY, dataset.fingerprint)
    # The version's manifest, then each filtered shard's row positions (read eagerly).
    assert _methods(requests.made())["GET"] <= 1 + shards
    assert loaded["m"][:] == expected
    del loaded
    gc.collect()


def test_a_version_of_the_previous_release_still_opens_and_describes(tmp_path: Path) -> None:
    store = DatasetStore(str(tmp_path))
    dataset = _pipeline(store, 3)
    stored = store.save(KEY, dataset)
    manifest = Path(store.path_for(KEY, dataset.fingerprint)) / "manifest.json"
    record = json.loads(manifest.read_text())
    assert set(record["metadata"]["entries"]) >= {s["table"] for s in record["metadata"]["shards"]}
    del record["metadata"]["entries"], record["metadata"]["size"]  # as the last release wrote it
    manifest.write_text(json.dumps(record))
    fresh = DatasetStore(str(tmp_path))
    assert fresh.contains(KEY, dataset.fingerprint)
    assert fresh.describe(KEY, dataset.fingerprint).size == stored.size
    assert fresh.load(KEY, dataset.fingerprint)["m"][:] == dataset["m"][:]


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "deleted"])
def test_a_damaged_shard_makes_a_local_version_absent(tmp_path: Path, damage: str) -> None:
    store = DatasetStore(str(tmp_path))
    dataset = _pipeline(store, 3)
    store.save(KEY, dataset)
    target = next(Path(tmp_path, "objects").glob("*/*/data-*.arrow"))
    if damage == "truncated":
        target.write_bytes(target.read_bytes()[:-10])
    elif damage == "flipped byte":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
    else:
        target.unlink()
    fresh = DatasetStore(str(tmp_path))
    with pytest.warns(CacheCorruptionWarning, match="quarantin"):
        assert not fresh.contains(KEY, dataset.fingerprint)
    with pytest.raises(DatasetNotStoredError, match="not stored"):
        fresh.load(KEY, dataset.fingerprint)
