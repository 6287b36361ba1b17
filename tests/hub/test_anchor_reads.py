"""What we push reads back, with our reader and with the anchor's `datasets.load_dataset`:
rows and features (ClassLabel names included), for a map-style dataset, several configs and
splits pushed in steps (the others kept), and a stream.

One subprocess reads every repository with the anchor (importing `datasets` takes seconds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster_ds import DatasetDict, load_dataset
from dagster_ds.testing import LocalHubServer
from tests.hub.conftest import Oracle
from tests.hub.test_push import SHARD_FILE, data_files, make, matches, push_configs
from tests.hub.test_push_incremental import load, write_file
from tests.hub.test_push_streaming import mapped_stream, shard_rows


def test_ours_and_the_anchor_read_what_we_push(
    local_hub: LocalHubServer, hub_api: Any, oracle: Oracle, hf_cache: Path, tmp_path: Path
) -> None:
    endpoint = local_hub.endpoint
    # A file per shard, ranked in row order: a file inserted between two others and one
    # appended after a first push are read in place.
    source = tmp_path / "source"
    source.mkdir()
    for number in (0, 1, 2, 4):
        write_file(source, number)
    load(source).push_to_hub("user/appended", endpoint=endpoint)
    write_file(source, 3)
    write_file(source, 5)
    appended = load(source)
    assert len(appended.push_to_hub("user/appended", endpoint=endpoint).files) == 2
    # The same for a selection in row order and for a stream of the files: read in place.
    write_file(source, 6)
    select = [i for i in range(len(appended)) if i % 3 != 1]
    appended.select(select).push_to_hub("user/selected", endpoint=endpoint)
    stream_files = sorted(str(path) for path in source.glob("*.jsonl"))
    streamed = load_dataset("json", data_files=stream_files[1:], split="train", streaming=True)
    streamed.push_to_hub("user/streamed", endpoint=endpoint)
    write_file(source, 7)
    selected = load(source).select(select + [i + 120 for i in range(40) if i % 3 != 1])
    assert len(selected.push_to_hub("user/selected", endpoint=endpoint).files) == 2
    stream_files = sorted(str(path) for path in source.glob("*.jsonl"))
    streamed = load_dataset("json", data_files=stream_files, split="train", streaming=True)
    assert len(streamed.push_to_hub("user/streamed", endpoint=endpoint).files) == 2
    ds = make(25).map(lambda x: {"n": len(x["tokens"])}).filter(lambda x: x["n"] != 2)
    ds.push_to_hub("user/rt", num_shards=3, endpoint=endpoint)
    configs = push_configs("user/multi", endpoint)
    stream = mapped_stream()
    stream.push_to_hub("user/stream", num_shards=5, endpoint=endpoint)

    anchor = oracle(
        ("user/rt", None),
        ("user/multi", "en"),
        ("user/multi", "fr"),
        ("user/stream", None),
        ("user/appended", None),
        ("user/selected", None),
        ("user/streamed", None),
    )

    assert anchor["user/appended:None"]["train"]["rows"] == appended.to_list()
    assert anchor["user/selected:None"]["train"]["rows"] == selected.to_list()
    assert anchor["user/streamed:None"]["train"]["rows"] == list(streamed)
    assert list(anchor["user/rt:None"]) == ["train"]
    assert anchor["user/rt:None"]["train"]["rows"] == ds.to_list()
    assert anchor["user/rt:None"]["train"]["features"] == ds.features.to_dict()
    for config, splits in configs.items():
        theirs = anchor[f"user/multi:{config}"]
        ours = load_dataset("user/multi", config, endpoint=endpoint)
        assert sorted(theirs) == sorted(ours) == sorted(splits)
        for split, expected in splits.items():
            assert theirs[split]["rows"] == ours[split].to_list() == expected.to_list()
            assert theirs[split]["features"] == expected.features.to_dict()
            assert ours[split].features == expected.features
    by_i = {row["i"]: row for row in stream}
    in_file_order = [by_i[i] for shard in shard_rows(hub_api, "user/stream") for i in shard]
    assert anchor["user/stream:None"]["train"]["rows"] == in_file_order
    features = stream.features
    assert features is not None
    assert anchor["user/stream:None"]["train"]["features"] == features.to_dict()

    # A DatasetDict push replaces its config's splits (as the anchor's does); others stay.
    DatasetDict({"train": make(1)}).push_to_hub("user/multi", "en", endpoint=endpoint)
    files = data_files(hub_api, "user/multi")
    assert matches(files, [SHARD_FILE.replace("data/", "en/"), SHARD_FILE.replace("data/", "fr/")])
    assert sorted(load_dataset("user/multi", "en", endpoint=endpoint)) == ["train"]
    assert load_dataset("user/multi", "fr", endpoint=endpoint)["train"].num_rows == 4
