"""A push uploads what changed: the Hub's files follow the dataset's shards, named by content."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import huggingface_hub._commit_api as commit_api
import pytest

from dagster_ds import Dataset, load_dataset
from dagster_ds.testing import LocalHubServer
from tests.hub.test_push import SHARD_FILE, commits, cut_files, make, matches

ROWS_PER_FILE = 20


def write_file(folder: Path, number: int, *, offset: int = 0) -> None:
    rows = [{"id": number * ROWS_PER_FILE + i + offset, "text": f"file {number} row {i}"}
            for i in range(ROWS_PER_FILE)]  # fmt: skip
    (folder / f"part-{number:04d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def load(folder: Path) -> Dataset:
    """The folder's files, a shard each (not grouped: these tiny files would share one)."""
    files = sorted(str(path) for path in folder.glob("*.jsonl"))
    return load_dataset("json", data_files=files, split="train", shard_bytes=0)


def data_blobs(hub_api: Any, repo_id: str) -> dict[str, str]:
    """The repository's Parquet files: path to the sha256 of the content."""
    tree = hub_api.list_repo_tree(repo_id, recursive=True, repo_type="dataset")
    return {e.path: e.lfs.sha256 for e in tree if e.path.endswith(".parquet")}


@pytest.fixture
def hundred_files(tmp_path: Path) -> Path:
    folder = tmp_path / "source"
    folder.mkdir()
    for number in range(100):
        write_file(folder, number)
    return folder


def test_appending_one_of_100_files_uploads_one_file(
    local_hub: LocalHubServer, hub_api: Any, hundred_files: Path
) -> None:
    endpoint = local_hub.endpoint
    first = load(hundred_files)
    first.push_to_hub("user/grow", endpoint=endpoint)
    before = data_blobs(hub_api, "user/grow")
    assert len(before) == 100  # a file per shard

    write_file(hundred_files, 100)
    appended = load(hundred_files)
    result = appended.push_to_hub("user/grow", endpoint=endpoint)

    after = data_blobs(hub_api, "user/grow")
    added = {path for path, blob in after.items() if before.get(path) != blob}
    assert len(added) == 1
    assert set(result.files) == added
    assert set(before) <= set(after)  # every old file kept, none re-uploaded
    assert result.num_rows == {"train": 101 * ROWS_PER_FILE}
    ours = load_dataset("user/grow", split="train", endpoint=endpoint)
    assert ours.to_list() == appended.to_list()


def test_a_changed_middle_file_replaces_only_its_own_file_in_the_same_commit(
    local_hub: LocalHubServer, hub_api: Any, hundred_files: Path
) -> None:
    endpoint = local_hub.endpoint
    load(hundred_files).push_to_hub("user/edit", endpoint=endpoint)
    before = data_blobs(hub_api, "user/edit")
    count = commits(hub_api, "user/edit")

    write_file(hundred_files, 50, offset=10_000)
    (hundred_files / "part-0007.jsonl").unlink()
    edited = load(hundred_files)
    result = edited.push_to_hub("user/edit", endpoint=endpoint)

    after = data_blobs(hub_api, "user/edit")
    assert commits(hub_api, "user/edit") == count + 1
    assert len(result.files) == 1
    assert len(set(before) - set(after)) == 2  # the old file 50 and the removed file 7
    assert len(after) == 99
    ours = load_dataset("user/edit", split="train", endpoint=endpoint)
    assert ours.to_list() == edited.to_list()


def test_an_unchanged_push_of_many_shards_makes_no_commit(
    local_hub: LocalHubServer, hub_api: Any, hundred_files: Path
) -> None:
    endpoint = local_hub.endpoint
    load(hundred_files).push_to_hub("user/same", endpoint=endpoint)
    count = commits(hub_api, "user/same")

    again = load(hundred_files).push_to_hub("user/same", endpoint=endpoint)

    assert again.skipped
    assert again.files == ()
    assert commits(hub_api, "user/same") == count


def test_a_cut_already_on_the_hub_is_not_uploaded_again(
    local_hub: LocalHubServer, hub_api: Any, tmp_path: Path
) -> None:
    endpoint = local_hub.endpoint
    ds = make(30)
    ds.push_to_hub("user/cut", num_shards=3, endpoint=endpoint)
    before = data_blobs(hub_api, "user/cut")
    assert matches(sorted(before), cut_files("train", 3))
    # The card loses its record of what was pushed: the fingerprint no longer skips the push.
    card = tmp_path / "README.md"
    card.write_text("---\nlicense: mit\n---\n")
    hub_api.upload_file(
        path_or_fileobj=str(card), path_in_repo="README.md", repo_id="user/cut", repo_type="dataset"
    )

    result = ds.push_to_hub("user/cut", num_shards=3, endpoint=endpoint)

    assert not result.skipped
    assert result.files == ()
    assert data_blobs(hub_api, "user/cut") == before
    assert load_dataset("user/cut", split="train", endpoint=endpoint).to_list() == ds.to_list()


def every_third_dropped(ds: Dataset) -> Dataset:
    """An indices mapping in row order: ``select`` of a list of positions."""
    return ds.select([i for i in range(len(ds)) if i % 3 != 1])


@pytest.mark.parametrize(
    "transform",
    [
        pytest.param(lambda ds: ds.filter(lambda x: x["id"] % 3 != 1), id="filter"),
        pytest.param(every_third_dropped, id="select"),
        pytest.param(lambda ds: every_third_dropped(every_third_dropped(ds)), id="select-twice"),
        pytest.param(lambda ds: ds.sort("id"), id="sort-in-shard-order"),
    ],
)
def test_appending_one_of_100_files_to_a_selection_uploads_one_file(
    local_hub: LocalHubServer, hub_api: Any, hundred_files: Path, transform: Any
) -> None:
    endpoint = local_hub.endpoint
    transform(load(hundred_files)).push_to_hub("user/chosen", endpoint=endpoint)
    before = data_blobs(hub_api, "user/chosen")
    assert len(before) == 100  # a file per source shard

    write_file(hundred_files, 100)
    appended = transform(load(hundred_files))
    result = appended.push_to_hub("user/chosen", endpoint=endpoint)

    after = data_blobs(hub_api, "user/chosen")
    added = {path for path, blob in after.items() if before.get(path) != blob}
    assert len(added) <= 2
    assert set(result.files) == added
    assert set(before) <= set(after)
    ours = load_dataset("user/chosen", split="train", endpoint=endpoint)
    assert ours.to_list() == appended.to_list()


def test_a_shuffled_dataset_is_cut_and_reads_back_in_its_order(
    local_hub: LocalHubServer, hub_api: Any, tmp_path: Path
) -> None:
    # Row order is a shuffle's content: its files are the anchor's cut, rewritten when it changes.
    folder = tmp_path / "source"
    folder.mkdir()
    for number in range(4):
        write_file(folder, number)
    shuffled = load(folder).shuffle(seed=3)
    shuffled.push_to_hub("user/shuffled", endpoint=local_hub.endpoint)

    assert matches(sorted(data_blobs(hub_api, "user/shuffled")), cut_files("train", 1))
    ours = load_dataset("user/shuffled", split="train", endpoint=local_hub.endpoint)
    assert ours.to_list() == shuffled.to_list()


def stream_of(folder: Path) -> Any:
    """The folder's files as a stream: a stream shard per file."""
    files = sorted(str(path) for path in folder.glob("*.jsonl"))
    return load_dataset("json", data_files=files, split="train", streaming=True)


def test_appending_one_of_100_files_to_a_stream_uploads_one_file(
    local_hub: LocalHubServer, hub_api: Any, hundred_files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = local_hub.endpoint
    first = stream_of(hundred_files).filter(lambda x: x["id"] % 3 != 1)
    assert first.num_shards == 100
    first.push_to_hub("user/stream-grow", endpoint=endpoint)
    before = data_blobs(hub_api, "user/stream-grow")
    assert len(before) == 100  # a file per stream shard

    write_file(hundred_files, 100)
    appended = stream_of(hundred_files).filter(lambda x: x["id"] % 3 != 1)
    sent: list[int] = []
    real_upload = commit_api.lfs_upload  # pyright: ignore[reportPrivateImportUsage]

    def counting_upload(operation: Any, **kwargs: Any) -> None:
        sent.append(operation.upload_info.size)
        real_upload(operation=operation, **kwargs)

    monkeypatch.setattr(commit_api, "lfs_upload", counting_upload)
    result = appended.push_to_hub("user/stream-grow", endpoint=endpoint)

    after = data_blobs(hub_api, "user/stream-grow")
    added = {path for path, blob in after.items() if before.get(path) != blob}
    assert len(added) == 1
    assert set(result.files) == added
    assert set(before) <= set(after)
    tree = hub_api.list_repo_tree("user/stream-grow", "data", repo_type="dataset")
    assert sent == [entry.size for entry in tree if entry.path in added]  # its bytes only
    assert result.num_rows == {"train": len(list(appended))}
    ours = load_dataset("user/stream-grow", split="train", endpoint=endpoint)
    assert ours.to_list() == list(appended)


def test_a_stream_whose_shards_moved_uploads_the_moved_files_under_new_names(
    local_hub: LocalHubServer, hub_api: Any, tmp_path: Path
) -> None:
    endpoint = local_hub.endpoint
    folder = tmp_path / "source"
    folder.mkdir()
    for number in range(4):
        write_file(folder, number)
    files = sorted(str(path) for path in folder.glob("*.jsonl"))
    load_dataset("json", data_files=files, split="train", streaming=True).push_to_hub(
        "user/moved", endpoint=endpoint
    )
    before = data_blobs(hub_api, "user/moved")

    moved = [*files[1:], files[0]]  # file 0 now comes last
    reordered = load_dataset("json", data_files=moved, split="train", streaming=True)
    result = reordered.push_to_hub("user/moved", endpoint=endpoint)

    after = data_blobs(hub_api, "user/moved")
    assert len(result.files) == 1  # file 0, under a rank after the others
    assert set(after) - set(before) == set(result.files)
    ours = load_dataset("user/moved", split="train", endpoint=endpoint)
    assert ours.to_list() == list(reordered)
    again = load_dataset("json", data_files=moved, split="train", streaming=True)
    assert again.push_to_hub("user/moved", endpoint=endpoint).skipped


def test_a_stream_named_by_content_in_processes(local_hub: LocalHubServer, hub_api: Any) -> None:
    from tests.hub.test_push_streaming import stream

    ds = stream(40, 4).map(lambda x: {"text": f"row {x['i']}"})
    one = ds.push_to_hub("user/by-content", endpoint=local_hub.endpoint)
    two = ds.push_to_hub("user/by-content-2", num_proc=2, endpoint=local_hub.endpoint)

    assert matches(one.files, [SHARD_FILE] * 4)
    assert one.files == two.files  # the same bytes, hence the same names
    assert data_blobs(hub_api, "user/by-content") == data_blobs(hub_api, "user/by-content-2")
    ours = load_dataset("user/by-content-2", split="train", endpoint=local_hub.endpoint)
    assert ours.to_list() == list(ds)
