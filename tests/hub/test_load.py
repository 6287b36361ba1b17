"""load_dataset of a Hub repository: configs, columns and filters, the commit in the fingerprint,
repositories pushed by the anchor or without a card, and the endpoint from HF_ENDPOINT."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dagster_ds import ClassLabel, Dataset, Features, Value, load_dataset
from dagster_ds.testing import LocalHubServer
from tests import _fast
from tests.conftest import RunPython

FEATURES = Features({"id": Value("int64"), "label": ClassLabel(names=["a", "b", "c"])})


def make(n: int) -> Dataset:
    return Dataset.from_dict({"id": list(range(n)), "label": [i % 3 for i in range(n)]}, FEATURES)


def test_columns_and_filters_read_only_what_is_asked(local_hub: LocalHubServer) -> None:
    make(30).push_to_hub("user/cols", num_shards=3, endpoint=local_hub.endpoint)
    ds = load_dataset(
        "user/cols",
        split="train",
        columns=["label"],
        filters=[("id", ">=", 25)],
        endpoint=local_hub.endpoint,
    )
    assert ds.to_list() == [{"label": i % 3} for i in range(25, 30)]
    assert ds.features == Features({"label": FEATURES["label"]})


def test_the_endpoint_comes_from_hf_endpoint_when_not_given(local_hub: LocalHubServer) -> None:
    assert os.environ["HF_ENDPOINT"] == local_hub.endpoint  # set by the local_hub fixture
    make(4).push_to_hub("user/env")
    assert load_dataset("user/env", split="train").to_list() == make(4).to_list()


def test_the_commit_is_part_of_the_fingerprint(
    local_hub: LocalHubServer, hub_api: Any, run_python: RunPython
) -> None:
    pushed = make(12).push_to_hub("user/fp", num_shards=2, endpoint=local_hub.endpoint)
    first = load_dataset("user/fp", split="train", endpoint=local_hub.endpoint)

    # Another process, same commit: the same fingerprint, and the data comes from the cache.
    printed = run_python(
        f"""
        import dagster_ds.load as load

        def no_reading(*args, **kwargs):
            raise AssertionError("a data file was read: the cache was not used")

        load.iter_batches = no_reading
        ds = load.load_dataset("user/fp", split="train", endpoint={local_hub.endpoint!r})
        print(ds.fingerprint, ds.num_rows)
        """
    )
    assert printed == f"{first.fingerprint} 12"

    # A new commit, even one that leaves the data files alone, is a new fingerprint.
    hub_api.upload_file(
        path_or_fileobj=b"notes", path_in_repo="notes.txt", repo_id="user/fp", repo_type="dataset"
    )
    second = load_dataset("user/fp", split="train", endpoint=local_hub.endpoint)
    assert second.fingerprint != first.fingerprint
    assert second.to_list() == first.to_list()
    pinned = load_dataset(
        "user/fp", split="train", revision=pushed.commit_oid, endpoint=local_hub.endpoint
    )
    assert pinned.fingerprint == first.fingerprint


ANCHOR_PUSH = """
import json, sys
import datasets

features = datasets.Features(
    {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
)
splits = datasets.DatasetDict({
    "train": datasets.Dataset.from_dict({"text": ["x", "y", "z"], "label": [0, 1, 1]}, features),
    "test": datasets.Dataset.from_dict({"text": ["w"], "label": [0]}, features),
})
splits.push_to_hub(sys.argv[1], token="anything")
print(json.dumps({name: ds.to_list() for name, ds in splits.items()}))
"""


def test_a_repository_pushed_by_the_anchor_is_read(
    local_hub: LocalHubServer, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        **local_hub.client_env,
        "HF_HOME": str(tmp_path / "anchor-home"),
        "HF_DATASETS_CACHE": str(tmp_path / "anchor-cache"),
    }
    done = _fast.run(
        [sys.executable, "-c", ANCHOR_PUSH, "user/by-anchor"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout.strip().splitlines()[-1])

    splits = load_dataset("user/by-anchor", endpoint=local_hub.endpoint)
    assert {name: ds.to_list() for name, ds in splits.items()} == expected
    assert splits["train"].features["label"] == ClassLabel(names=["neg", "pos"])


def test_a_repository_without_a_card_is_read_by_layout(
    local_hub: LocalHubServer, hub_api: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "repo"
    (folder / "data").mkdir(parents=True)
    for split, rows in (("train", [1, 2, 3]), ("test", [4])):
        pq.write_table(pa.table({"x": rows}), folder / "data" / f"{split}-00000-of-00001.parquet")
    hub_api.create_repo("user/bare", repo_type="dataset")
    hub_api.upload_folder(folder_path=folder, repo_id="user/bare", repo_type="dataset")
    splits = load_dataset("user/bare", endpoint=local_hub.endpoint)
    assert splits.num_rows == {"train": 3, "test": 1}

    # Without the layout's names, every data file is "train" (as the anchor decides too).
    (folder / "data" / "train-00000-of-00001.parquet").rename(folder / "data" / "some.parquet")
    (folder / "data" / "test-00000-of-00001.parquet").rename(folder / "data" / "more.parquet")
    hub_api.create_repo("user/loose", repo_type="dataset")
    hub_api.upload_folder(folder_path=folder, repo_id="user/loose", repo_type="dataset")
    only = load_dataset("user/loose", split="train", endpoint=local_hub.endpoint)
    assert sorted(only["x"][:]) == [1, 2, 3, 4]
    picked = load_dataset(
        "user/loose", data_files={"test": "data/more.parquet"}, endpoint=local_hub.endpoint
    )
    assert picked["test"]["x"][:] == [4]
