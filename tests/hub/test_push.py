"""push_to_hub through the local Hub: layout, round trips (ours and the anchor's), one commit,
skip-if-unchanged, other configs and splits kept, branches and pull requests."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dagster_ds import ClassLabel, Dataset, DatasetDict, Features, List, Value, load_dataset
from dagster_ds.errors import HubFeaturesMismatchError
from dagster_ds.testing import LocalHubServer

FEATURES = Features(
    {
        "text": Value("string"),
        "label": ClassLabel(names=["neg", "pos"]),
        "tokens": List(Value("string")),
        "score": Value("float32"),
    }
)


def make(n: int, offset: int = 0) -> Dataset:
    rows = range(offset, offset + n)
    return Dataset.from_dict(
        {
            "text": [None if i % 7 == 3 else f"text {i}" for i in rows],
            "label": [i % 2 for i in rows],
            "tokens": [[f"t{j}" for j in range(i % 4)] for i in rows],
            "score": [i / 4 for i in rows],
        },
        features=FEATURES,
    )


def card(hub_api: Any, repo_id: str, revision: str | None = None) -> dict[str, Any]:
    text = hub_api.hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=revision)
    header = Path(text).read_text().split("---\n")[1]
    return yaml.safe_load(header)


def data_files(hub_api: Any, repo_id: str, revision: str | None = None) -> list[str]:
    files = hub_api.list_repo_files(repo_id, repo_type="dataset", revision=revision)
    return sorted(f for f in files if f.endswith(".parquet"))


def cut_files(split: str, count: int) -> list[str]:
    """The names of a split cut in ``count`` files: the anchor's, plus a content key."""
    return [rf"data/{split}-{i:05d}-of-{count:05d}-[0-9a-f]{{16}}\.parquet" for i in range(count)]


def matches(paths: list[str] | tuple[str, ...], patterns: list[str]) -> bool:
    return len(paths) == len(patterns) and all(
        re.fullmatch(pattern, path) for pattern, path in zip(patterns, paths, strict=True)
    )


SHARD_FILE = r"data/train-[0-9a-f]{10}-[0-9a-f]{16}\.parquet"


def commits(hub_api: Any, repo_id: str, revision: str | None = None) -> int:
    return len(hub_api.list_repo_commits(repo_id, repo_type="dataset", revision=revision))


def test_a_dataset_round_trips_through_our_reader(
    local_hub: LocalHubServer, hub_api: Any, hf_cache: Path
) -> None:
    ds = make(25).map(lambda x: {"n": len(x["tokens"])}).filter(lambda x: x["n"] != 2)
    result = ds.push_to_hub("user/rt", num_shards=3, endpoint=local_hub.endpoint)

    assert not result.skipped
    assert result.num_rows == {"train": len(ds)}
    assert matches(data_files(hub_api, "user/rt"), cut_files("train", 3))
    assert result.commit_oid == hub_api.dataset_info("user/rt").sha
    ours = load_dataset("user/rt", split="train", endpoint=local_hub.endpoint)
    assert ours.to_list() == ds.to_list()
    assert ours.features == ds.features


def test_the_card_records_fingerprint_parents_and_transforms(
    local_hub: LocalHubServer, hub_api: Any, hf_cache: Path
) -> None:
    source = make(6)
    ds = source.map(lambda x: {"n": len(x["tokens"])}).filter(lambda x: x["label"] == 1)
    ds.push_to_hub("user/card", endpoint=local_hub.endpoint)

    header = card(hub_api, "user/card")
    record = header["dagster_ds"]["configs"]["default"]["splits"]["train"]
    assert record["fingerprint"] == ds.fingerprint
    assert record["parents"] == list(ds.lineage[-1].parents)
    assert [step["transform"] for step in record["lineage"]] == ["map", "filter"]
    assert record["lineage"][0]["parents"] == [source.fingerprint]
    assert header["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}
    ]
    info = header["dataset_info"]
    assert info["splits"] == [
        {"name": "train", "num_bytes": info["dataset_size"], "num_examples": 3}
    ]
    assert Features.from_yaml_list(info["features"]) == ds.features


def push_configs(repo_id: str, endpoint: str) -> dict[str, dict[str, Dataset]]:
    """Two configs pushed in three steps; what each config's splits should hold."""
    english = DatasetDict({"train": make(5), "test": make(3, offset=100)})
    english.push_to_hub(repo_id, "en", endpoint=endpoint)
    make(4, offset=200).push_to_hub(repo_id, "fr", endpoint=endpoint)
    make(2, offset=300).push_to_hub(repo_id, "en", split="validation", endpoint=endpoint)
    return {
        "en": {"train": make(5), "test": make(3, offset=100), "validation": make(2, offset=300)},
        "fr": {"train": make(4, offset=200)},
    }


def test_an_unchanged_dataset_makes_no_commit(
    local_hub: LocalHubServer, hub_api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = local_hub.endpoint
    first = make(10).push_to_hub("user/skip", endpoint=endpoint)
    before = commits(hub_api, "user/skip")

    with caplog.at_level(logging.INFO, logger="dagster_ds.hub"):
        again = make(10).push_to_hub("user/skip", endpoint=endpoint)

    assert again.skipped
    assert again.commit_oid == first.commit_oid
    assert again.num_rows == {"train": 10}
    assert commits(hub_api, "user/skip") == before
    assert "unchanged" in caplog.text
    assert "no commit" in caplog.text
    assert "skipped" not in str(first)

    changed = make(10).map(lambda x: {"score": x["score"] + 1})
    pushed = changed.push_to_hub("user/skip", endpoint=endpoint)
    assert not pushed.skipped
    assert commits(hub_api, "user/skip") == before + 1
    # Asking for another number of shards is a new layout: pushed, old shards deleted.
    resharded = changed.push_to_hub("user/skip", num_shards=2, endpoint=endpoint)
    assert not resharded.skipped
    assert matches(data_files(hub_api, "user/skip"), cut_files("train", 2))
    assert changed.push_to_hub("user/skip", num_shards=2, endpoint=endpoint).skipped


def test_a_dataset_dict_push_skips_or_keeps_unchanged_splits(
    local_hub: LocalHubServer, hub_api: Any
) -> None:
    endpoint = local_hub.endpoint
    splits = DatasetDict({"train": make(6), "test": make(2, offset=50)})
    splits.push_to_hub("user/dict", endpoint=endpoint)
    before = commits(hub_api, "user/dict")
    assert splits.push_to_hub("user/dict", endpoint=endpoint).skipped
    assert commits(hub_api, "user/dict") == before

    test_files = [p for p in data_files(hub_api, "user/dict") if p.startswith("data/test")]
    changed = DatasetDict({"train": make(7), "test": make(2, offset=50)})
    result = changed.push_to_hub("user/dict", endpoint=endpoint)
    assert not result.skipped
    assert result.unchanged == ("test",)
    assert matches(result.files, [SHARD_FILE])
    assert [p for p in data_files(hub_api, "user/dict") if p.startswith("data/test")] == test_files
    loaded = load_dataset("user/dict", endpoint=endpoint)
    assert loaded.num_rows == {"train": 7, "test": 2}
    assert loaded["test"].to_list() == make(2, offset=50).to_list()


def test_many_files_are_one_commit(local_hub: LocalHubServer, hub_api: Any) -> None:
    ds = make(120)
    ds.push_to_hub("user/many", num_shards=60, num_proc=2, endpoint=local_hub.endpoint)

    assert len(data_files(hub_api, "user/many")) == 60
    assert commits(hub_api, "user/many") == 2  # the repository's first commit, then ours
    assert card(hub_api, "user/many")["dataset_info"]["splits"][0]["num_examples"] == 120


def test_parallel_and_sequential_pushes_write_identical_files(
    local_hub: LocalHubServer, hub_api: Any
) -> None:
    ds = make(40)
    ds.push_to_hub("user/seq", num_shards=4, endpoint=local_hub.endpoint)
    ds.push_to_hub("user/par", num_shards=4, num_proc=3, endpoint=local_hub.endpoint)

    def blobs(repo_id: str) -> list[str]:
        tree = hub_api.list_repo_tree(repo_id, path_in_repo="data", repo_type="dataset")
        return [entry.lfs.sha256 for entry in sorted(tree, key=lambda entry: entry.path)]

    assert blobs("user/seq") == blobs("user/par")


def test_max_shard_size_sets_the_number_of_shards(local_hub: LocalHubServer, hub_api: Any) -> None:
    ds = make(50)
    limit = ds.data.nbytes // 3
    ds.push_to_hub("user/sized", max_shard_size=limit, endpoint=local_hub.endpoint)
    assert len(data_files(hub_api, "user/sized")) == int(ds.data.nbytes / limit) + 1


def test_a_branch_and_a_pull_request_leave_main_alone(
    local_hub: LocalHubServer, hub_api: Any
) -> None:
    endpoint = local_hub.endpoint
    main = make(3).push_to_hub("user/branches", endpoint=endpoint)
    hub_api.create_branch("user/branches", branch="dev", repo_type="dataset")

    dev = make(4).push_to_hub("user/branches", revision="dev", endpoint=endpoint)
    pr = make(5).push_to_hub("user/branches", create_pr=True, endpoint=endpoint)

    assert hub_api.dataset_info("user/branches").sha == main.commit_oid
    assert dev.revision == "dev"
    assert hub_api.dataset_info("user/branches", revision="dev").sha == dev.commit_oid
    assert pr.pr_url is not None
    assert load_dataset("user/branches", split="train", endpoint=endpoint).num_rows == 3
    on_dev = load_dataset("user/branches", split="train", revision="dev", endpoint=endpoint)
    assert on_dev.num_rows == 4
    pr_ref = f"refs/pr/{pr.pr_url.rstrip('/').rsplit('/', 1)[-1]}"
    on_pr = load_dataset("user/branches", split="train", revision=pr_ref, endpoint=endpoint)
    assert on_pr.num_rows == 5


def test_a_split_with_other_features_than_its_siblings_is_refused(
    local_hub: LocalHubServer, hub_api: Any
) -> None:
    make(3).push_to_hub("user/mixed", endpoint=local_hub.endpoint)
    before = commits(hub_api, "user/mixed")
    other = Dataset.from_dict({"x": [1, 2]})
    blobs = sorted((local_hub.data_dir / "blobs").rglob("*"))
    with pytest.raises(HubFeaturesMismatchError, match=r"differ from those of its other splits"):
        other.push_to_hub("user/mixed", split="test", endpoint=local_hub.endpoint)
    assert commits(hub_api, "user/mixed") == before
    assert sorted((local_hub.data_dir / "blobs").rglob("*")) == blobs  # refused before uploading


def test_an_empty_dataset_is_one_empty_shard(local_hub: LocalHubServer, hub_api: Any) -> None:
    empty = make(3).filter(lambda x: False)
    empty.push_to_hub("user/empty", endpoint=local_hub.endpoint)
    assert matches(data_files(hub_api, "user/empty"), [SHARD_FILE])
    loaded = load_dataset("user/empty", split="train", endpoint=local_hub.endpoint)
    assert loaded.num_rows == 0
    assert loaded.features == FEATURES


def test_pushed_parquet_files_carry_page_checksums(
    local_hub: LocalHubServer, hub_api: Any, hf_cache: Path, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    from dagster_ds.errors import MalformedFileError

    make(200).push_to_hub("user/crc", endpoint=local_hub.endpoint)
    (name,) = data_files(hub_api, "user/crc")
    pushed = hub_api.hf_hub_download("user/crc", name, repo_type="dataset", cache_dir=hf_cache)
    chunk = pq.read_metadata(pushed).row_group(0).column(0)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    data = bytearray(Path(pushed).read_bytes())
    data[start + chunk.total_compressed_size - 2] ^= 0xFF  # inside the column's last data page
    flipped = tmp_path / "flipped.parquet"
    flipped.write_bytes(bytes(data))
    with pytest.raises(MalformedFileError, match=r"flipped\.parquet.*row group 0.*CRC"):
        load_dataset("parquet", data_files=str(flipped), split="train")
