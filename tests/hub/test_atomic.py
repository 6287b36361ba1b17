"""A push is atomic: killed after its uploads and before its commit, it leaves main as it was,
and the retry reuses the uploaded files; a commit racing ours is merged, not overwritten."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import huggingface_hub._commit_api as commit_api
import pytest

from dagster_ds import Dataset, load_dataset
from dagster_ds.testing import LocalHubServer
from tests import _fast
from tests.conftest import REPO_ROOT

KILLED_PUSH = textwrap.dedent(
    """
    import os, signal, sys
    import huggingface_hub
    from dagster_ds import Dataset

    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    huggingface_hub.HfApi.create_commit = killed  # die right before committing
    rows = int(sys.argv[3])
    ds = Dataset.from_dict({"i": list(range(rows)), "s": [f"row {i}" for i in range(rows)]})
    ds.push_to_hub(sys.argv[1], num_shards=4, endpoint=sys.argv[2])
    """
)


def version(rows: int) -> Dataset:
    return Dataset.from_dict({"i": list(range(rows)), "s": [f"row {i}" for i in range(rows)]})


def test_a_push_killed_before_its_commit_changes_nothing_and_the_retry_reuses_uploads(
    local_hub: LocalHubServer, hub_api: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = local_hub.endpoint
    first = version(10).push_to_hub("user/atomic", endpoint=endpoint)
    commits = hub_api.list_repo_commits("user/atomic", repo_type="dataset")
    files = hub_api.list_repo_files("user/atomic", repo_type="dataset")
    blobs = sum(1 for path in (local_hub.data_dir / "blobs").rglob("*") if path.is_file())

    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(tmp_path / "tmp")}
    killed = _fast.run(
        [sys.executable, "-c", KILLED_PUSH, "user/atomic", endpoint, "400"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr

    assert hub_api.dataset_info("user/atomic").sha == first.commit_oid
    assert hub_api.list_repo_commits("user/atomic", repo_type="dataset") == commits
    assert hub_api.list_repo_files("user/atomic", repo_type="dataset") == files
    assert load_dataset("user/atomic", split="train", endpoint=endpoint).num_rows == 10
    uploaded = sum(1 for path in (local_hub.data_dir / "blobs").rglob("*") if path.is_file())
    assert uploaded == blobs + 4  # the four shards reached the Hub, unreferenced

    uploads: list[str] = []
    real_upload = commit_api.lfs_upload  # pyright: ignore[reportPrivateImportUsage]

    def counting_upload(operation: Any, **kwargs: Any) -> None:
        uploads.append(operation.path_in_repo)
        real_upload(operation=operation, **kwargs)

    monkeypatch.setattr(commit_api, "lfs_upload", counting_upload)
    retry = version(400).push_to_hub("user/atomic", num_shards=4, endpoint=endpoint)

    assert uploads == []  # every shard was already on the Hub
    assert not retry.skipped
    assert len(hub_api.list_repo_commits("user/atomic", repo_type="dataset")) == len(commits) + 1
    assert load_dataset("user/atomic", split="train", endpoint=endpoint).to_list() == (
        version(400).to_list()
    )


KILLED_STREAM_PUSH = textwrap.dedent(
    """
    import os, signal, sys
    import huggingface_hub
    from dagster_ds.streaming import IterableDataset

    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    huggingface_hub.HfApi.create_commit = killed  # die right before committing
    IterableDataset.from_dict({"i": list(range(40))}, num_shards=4).push_to_hub(
        sys.argv[1], endpoint=sys.argv[2]
    )
    """
)


def test_a_stream_push_killed_before_its_commit_is_retried_without_uploads(
    local_hub: LocalHubServer, hub_api: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster_ds.streaming import IterableDataset

    endpoint = local_hub.endpoint
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(tmp_path / "tmp")}
    killed = _fast.run(
        [sys.executable, "-c", KILLED_STREAM_PUSH, "user/atomic-stream", endpoint],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr
    assert not [f for f in hub_api.list_repo_files("user/atomic-stream", repo_type="dataset")
                if f.endswith(".parquet")]  # fmt: skip

    uploads: list[str] = []
    real_upload = commit_api.lfs_upload  # pyright: ignore[reportPrivateImportUsage]

    def counting_upload(operation: Any, **kwargs: Any) -> None:
        uploads.append(operation.path_in_repo)
        real_upload(operation=operation, **kwargs)

    monkeypatch.setattr(commit_api, "lfs_upload", counting_upload)
    stream = IterableDataset.from_dict({"i": list(range(40))}, num_shards=4)
    retry = stream.push_to_hub("user/atomic-stream", endpoint=endpoint)

    assert uploads == []  # the files, named by their bytes, were already on the Hub
    assert len(retry.files) == 4
    ours = load_dataset("user/atomic-stream", split="train", endpoint=endpoint)
    assert ours.to_list() == list(stream)


def test_a_push_that_lands_between_our_upload_and_commit_is_kept(
    local_hub: LocalHubServer,
    hub_api: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    endpoint = local_hub.endpoint
    version(3).push_to_hub("user/race", endpoint=endpoint)
    real_preupload = huggingface_hub_preupload()
    raced: list[bool] = []

    def racing_preupload(self: Any, *args: Any, **kwargs: Any) -> None:
        real_preupload(self, *args, **kwargs)
        if not raced:  # another writer updates the card while our shards upload
            raced.append(True)
            version(7).push_to_hub("user/race", split="validation", endpoint=endpoint)

    monkeypatch.setattr("huggingface_hub.HfApi.preupload_lfs_files", racing_preupload)
    with caplog.at_level("INFO", logger="dagster_ds.hub"):
        result = version(5).push_to_hub("user/race", split="test", endpoint=endpoint)

    assert "retrying the commit" in caplog.text
    assert not result.skipped
    splits = load_dataset("user/race", endpoint=endpoint)
    assert splits.num_rows == {"train": 3, "validation": 7, "test": 5}


def huggingface_hub_preupload() -> Any:
    import huggingface_hub

    return huggingface_hub.HfApi.preupload_lfs_files
