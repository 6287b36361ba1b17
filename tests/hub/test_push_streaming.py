"""IterableDataset.push_to_hub and load_dataset(streaming=True) of Hub repositories: round trips
(ours and the anchor's reader), the anchor's round-robin shards, processes, bounded memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from dagster_ds import ClassLabel, Features, Value, load_dataset
from dagster_ds.hub import _shards
from dagster_ds.streaming import IterableDataset, IterableDatasetDict
from dagster_ds.testing import LocalHubServer

FEATURES = Features({"i": Value("int64"), "label": ClassLabel(names=["even", "odd"])})


def rows(shards: list[list[int]]) -> Iterator[dict[str, int]]:
    for shard in shards:
        for i in shard:
            yield {"i": i, "label": i % 2}


def stream(num_rows: int, num_sources: int) -> IterableDataset:
    """``num_rows`` rows in ``num_sources`` contiguous source shards."""
    bounds = [num_rows * s // num_sources for s in range(num_sources + 1)]
    shards = [list(range(bounds[s], bounds[s + 1])) for s in range(num_sources)]
    return IterableDataset.from_generator(rows, FEATURES, gen_kwargs={"shards": shards})


def shard_rows(hub_api: Any, repo_id: str) -> list[list[int]]:
    names = sorted(
        f for f in hub_api.list_repo_files(repo_id, repo_type="dataset") if f.endswith(".parquet")
    )
    out = []
    for name in names:
        path = hub_api.hf_hub_download(repo_id, name, repo_type="dataset")
        out.append(pq.read_table(path).column("i").to_pylist())
    return out


def mapped_stream() -> IterableDataset:
    features = Features({**FEATURES, "double": Value("int64")})
    ds = stream(10, 2).map(lambda x: {"double": x["i"] * 2}, features=features)
    return ds.filter(lambda x: x["i"] != 4)


def test_a_stream_round_trips_through_our_reader(
    local_hub: LocalHubServer, hub_api: Any, hf_cache: Path
) -> None:
    ds = mapped_stream()
    result = ds.push_to_hub("user/stream", num_shards=5, endpoint=local_hub.endpoint)

    assert not result.skipped
    assert result.num_rows == {"train": 9}
    shards = shard_rows(hub_api, "user/stream")
    assert shards == [[0, 3], [1], [2], [5, 7, 9], [6, 8]]
    # Read back in file order: the rows, as the round robin placed them.
    by_i = {row["i"]: row for row in ds}
    expected = [by_i[i] for shard in shards for i in shard]
    ours = load_dataset("user/stream", split="train", endpoint=local_hub.endpoint)
    assert ours.to_list() == expected
    assert ours.features["label"] == FEATURES["label"]
    streamed = load_dataset(
        "user/stream", split="train", streaming=True, endpoint=local_hub.endpoint
    )
    assert list(streamed) == expected
    assert streamed.fingerprint == ours.fingerprint
    header = yaml.safe_load(
        Path(hub_api.hf_hub_download("user/stream", "README.md", repo_type="dataset"))
        .read_text()
        .split("---\n")[1]
    )
    record = header["dagster_ds"]["configs"]["default"]["splits"]["train"]
    assert record["fingerprint"] == ds.fingerprint
    assert [step["transform"] for step in record["lineage"]] == ["map", "filter"]
    assert record["parents"] == [ds.lineage[-2].fingerprint]
    assert ds.push_to_hub("user/stream", num_shards=5, endpoint=local_hub.endpoint).skipped


def test_the_anchors_round_robin_shard_sizes(local_hub: LocalHubServer, hub_api: Any) -> None:
    endpoint = local_hub.endpoint
    stream(10, 1).push_to_hub("user/rr12", num_shards=12, endpoint=endpoint)
    assert [len(r) for r in shard_rows(hub_api, "user/rr12")] == [1] * 10 + [0, 0]
    stream(10, 2).push_to_hub("user/rr5", num_shards=5, endpoint=endpoint)
    assert shard_rows(hub_api, "user/rr5") == [[0, 3], [1, 4], [2], [5, 7, 9], [6, 8]]
    stream(10, 4).push_to_hub("user/default", endpoint=endpoint)  # the stream's own shards
    assert shard_rows(hub_api, "user/default") == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]


def test_num_proc_writes_in_processes_the_same_files(
    local_hub: LocalHubServer, hub_api: Any
) -> None:
    ds = stream(40, 4).map(lambda x: {"text": f"row {x['i']}"})
    ds.push_to_hub("user/one", num_shards=6, endpoint=local_hub.endpoint)
    ds.push_to_hub("user/two", num_shards=6, num_proc=2, endpoint=local_hub.endpoint)

    def blobs(repo_id: str) -> list[str]:
        tree = hub_api.list_repo_tree(repo_id, path_in_repo="data", repo_type="dataset")
        return [entry.lfs.sha256 for entry in sorted(tree, key=lambda entry: entry.path)]

    assert blobs("user/one") == blobs("user/two")
    assert shard_rows(hub_api, "user/two") == shard_rows(hub_api, "user/one")


@pytest.mark.parametrize("num_shards", [8, None], ids=["cut", "by-content"])
def test_a_stream_is_pushed_in_bounded_memory(
    local_hub: LocalHubServer, monkeypatch: pytest.MonkeyPatch, num_shards: int | None
) -> None:
    monkeypatch.setattr(_shards, "DEFAULT_BUFFER_BYTES", 2 << 20)
    text = "x" * 500
    peak = [0]

    def big(shards: list[int]) -> Iterator[dict[str, Any]]:
        for shard in shards:
            for i in range(20_000):  # 20k rows of ~500 bytes: ~10 MB per source shard
                if i % 2000 == 0:
                    peak[0] = max(peak[0], pa.total_allocated_bytes())
                yield {"i": shard * 20_000 + i, "text": text}

    ds = IterableDataset.from_generator(big, gen_kwargs={"shards": [0, 1, 2, 3]})
    baseline = pa.total_allocated_bytes()
    result = ds.push_to_hub("user/big", num_shards=num_shards, endpoint=local_hub.endpoint)
    assert result.num_rows == {"train": 80_000}  # ~40 MB in all
    assert peak[0] - baseline < 16 << 20


def test_an_iterable_dataset_dict_is_one_commit(local_hub: LocalHubServer, hub_api: Any) -> None:
    splits = IterableDatasetDict({"train": stream(6, 2), "test": stream(3, 1)})
    result = splits.push_to_hub("user/sdict", endpoint=local_hub.endpoint)
    assert dict(result.num_rows) == {"train": 6, "test": 3}
    assert len(hub_api.list_repo_commits("user/sdict", repo_type="dataset")) == 2
    loaded = load_dataset("user/sdict", streaming=True, endpoint=local_hub.endpoint)
    assert {name: len(list(split)) for name, split in loaded.items()} == {"train": 6, "test": 3}


def test_a_streamed_hub_dataset_keeps_the_token_out_of_its_state(tmp_path: Path) -> None:
    token = "hf_streamSecret0b9e7d2c4a"
    with LocalHubServer(tmp_path / "hub", token=token) as hub:
        stream(6, 2).push_to_hub("user/private", token=token, endpoint=hub.endpoint)
        streamed = load_dataset(
            "user/private", split="train", streaming=True, token=token, endpoint=hub.endpoint
        )
        iterator = iter(streamed)
        next(iterator)
        state = json.dumps(streamed.state_dict())
        assert token not in state
        assert token not in repr(streamed)
        assert len(list(iterator)) == 5
