"""Uploads and commits on the local Hub through the real huggingface_hub client."""

import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    HfFileSystem,
    RepoFile,
)
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError
from huggingface_hub.hf_api import BlobLfsInfo
from huggingface_hub.lfs import UploadInfo, post_lfs_batch_info

from dagster_ds.hub.server import LocalHubServer
from tests import _fast

REPO = "user/demo"


def _files(api: HfApi, revision: str = "main") -> dict[str, BlobLfsInfo | None]:
    """The repo's files (path -> LFS info, None for regular files)."""
    tree = api.list_repo_tree(REPO, repo_type="dataset", recursive=True, revision=revision)
    return {e.path: e.lfs for e in tree if isinstance(e, RepoFile)}


def _read(api: HfApi, path: str, cache: Path, revision: str | None = None) -> bytes:
    local = api.hf_hub_download(REPO, path, repo_type="dataset", revision=revision, cache_dir=cache)
    return Path(local).read_bytes()


def _lfs_upload_requests(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """(method, path) of the requests to LFS upload URLs, from the server's access log."""
    found = []
    for record in caplog.records:
        request = re.search(r'"(\w+) (\S+) HTTP', record.getMessage())
        if record.name == "uvicorn.access" and request and "/lfs-uploads/" in request[2]:
            found.append((request[1], request[2]))
    return found


@pytest.fixture
def server(tmp_path):
    """A local Hub with small LFS and multipart thresholds, logging requests."""
    with LocalHubServer(
        tmp_path / "hub",
        lfs_threshold=4096,
        multipart_threshold=64 * 1024,
        multipart_chunk_size=32 * 1024,
        access_log=True,
    ) as hub:
        yield hub


@pytest.fixture
def api(server):
    api = HfApi(endpoint=server.endpoint, token="test-token")
    api.create_repo(REPO, repo_type="dataset")
    return api


def test_upload_folder_small_and_lfs_files_in_one_commit(api, tmp_path, hf_cache):
    folder = tmp_path / "folder"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# Demo\n")
    (folder / "data" / "train.parquet").write_bytes(b"PAR1 small but LFS by rule")
    (folder / "big.txt").write_bytes(b"x" * 10_000)  # LFS by size (threshold 4096)
    (folder / "blob.dat").write_bytes(b"\0\1\2")  # LFS because binary

    info = api.upload_folder(folder_path=folder, repo_id=REPO, repo_type="dataset")

    files = _files(api)
    assert files[".gitattributes"] is None
    assert files["README.md"] is None
    for lfs_path, size in (("data/train.parquet", 26), ("big.txt", 10_000), ("blob.dat", 3)):
        lfs = files[lfs_path]
        assert lfs is not None, lfs_path
        assert lfs.size == size
    assert _read(api, "big.txt", hf_cache) == b"x" * 10_000
    assert _read(api, "data/train.parquet", hf_cache) == b"PAR1 small but LFS by rule"
    commits = api.list_repo_commits(REPO, repo_type="dataset")
    assert commits[0].commit_id == info.oid
    assert len(commits) == 2  # the initial commit, then the whole folder at once
    card = api.dataset_info(REPO).card_data
    assert card is not None
    assert card.license == "mit"

    # Same content again: the client sees the files are unchanged and makes no commit.
    again = api.upload_folder(folder_path=folder, repo_id=REPO, repo_type="dataset")
    assert again.oid == info.oid


def test_multipart_upload(api, tmp_path, hf_cache, caplog):
    caplog.set_level(logging.INFO, logger="uvicorn.access")
    content = os.urandom(200 * 1024)  # 7 parts of 32 KiB
    path = tmp_path / "large.bin"
    path.write_bytes(content)

    answer, errors, transfer = post_lfs_batch_info(
        [UploadInfo.from_path(str(path))],
        token="test-token",
        repo_type="dataset",
        repo_id=REPO,
        endpoint=api.endpoint,
    )
    assert errors == []
    assert transfer == "multipart"
    header = answer[0]["actions"]["upload"]["header"]
    assert header["chunk_size"] == str(32 * 1024)
    assert sorted(int(k) for k in header if k.isdigit()) == list(range(1, 8))

    api.upload_file(
        path_or_fileobj=str(path), path_in_repo="large.bin", repo_id=REPO, repo_type="dataset"
    )
    assert _read(api, "large.bin", hf_cache) == content
    requests = _lfs_upload_requests(caplog)
    part_numbers = [int(path.rsplit("/", 1)[1]) for method, path in requests if method == "PUT"]
    assert sorted(part_numbers) == list(range(1, 8))  # one PUT per part
    assert [method for method, _ in requests].count("POST") == 1  # then one completion


def test_create_commit_with_create_pr(api, hf_cache):
    main_before = api.dataset_info(REPO).sha
    first = api.create_commit(
        REPO,
        [CommitOperationAdd("pr.txt", b"proposal")],
        commit_message="Propose",
        repo_type="dataset",
        create_pr=True,
    )
    assert first.pr_revision == "refs/pr/1"
    assert first.pr_num == 1
    assert first.pr_url == f"{api.endpoint}/datasets/user/demo/discussions/1"
    assert api.dataset_info(REPO).sha == main_before
    assert "pr.txt" not in _files(api)
    assert "pr.txt" in _files(api, revision="refs/pr/1")
    assert _read(api, "pr.txt", hf_cache, revision="refs/pr/1") == b"proposal"
    fs = HfFileSystem(endpoint=api.endpoint, token="test-token")
    assert fs.cat(f"datasets/{REPO}@refs/pr/1/pr.txt") == b"proposal"

    # Commit again onto the PR ref, then open a second PR.
    on_pr = api.create_commit(
        REPO,
        [CommitOperationAdd("pr2.txt", b"more")],
        commit_message="More",
        repo_type="dataset",
        revision="refs/pr/1",
    )
    second = api.create_commit(
        REPO,
        [CommitOperationAdd("other.txt", b"x")],
        commit_message="Other",
        repo_type="dataset",
        create_pr=True,
    )
    assert second.pr_revision == "refs/pr/2"
    refs = api.list_repo_refs(REPO, repo_type="dataset", include_pull_requests=True)
    assert {(r.ref, r.target_commit) for r in refs.pull_requests or []} == {
        ("refs/pr/1", on_pr.oid),
        ("refs/pr/2", second.oid),
    }


def test_parent_commit_is_honoured(api):
    head = api.dataset_info(REPO).sha
    assert head is not None
    api.create_commit(
        REPO,
        [CommitOperationAdd("a.txt", b"1")],
        commit_message="a",
        repo_type="dataset",
        parent_commit=head,
    )
    with pytest.raises(HfHubHTTPError) as info:
        api.create_commit(
            REPO,
            [CommitOperationAdd("b.txt", b"2")],
            commit_message="b",
            repo_type="dataset",
            parent_commit=head,
        )
    assert info.value.response.status_code == 412
    assert "b.txt" not in _files(api)


def test_delete_file_and_folder(api):
    api.create_commit(
        REPO,
        [CommitOperationAdd(p, b"x") for p in ("a.txt", "dir/b.txt", "dir/sub/c.txt", "keep.txt")],
        commit_message="add",
        repo_type="dataset",
    )
    api.create_commit(
        REPO,
        [CommitOperationDelete("a.txt"), CommitOperationDelete("dir/")],
        commit_message="delete",
        repo_type="dataset",
    )
    assert set(_files(api)) == {".gitattributes", "keep.txt"}
    with pytest.raises(EntryNotFoundError, match="A file with this name doesn't exist"):
        api.delete_file("missing.txt", REPO, repo_type="dataset")
    with pytest.raises(EntryNotFoundError):
        api.delete_folder("missing", REPO, repo_type="dataset")


_UPLOAD_THEN_HANG = """
import sys, time
from huggingface_hub import CommitOperationAdd, HfApi
api = HfApi(endpoint=sys.argv[1], token="test-token")
op = CommitOperationAdd("data/big.parquet", sys.argv[2])
api.preupload_lfs_files("user/demo", [op], repo_type="dataset")
print("uploaded", flush=True)
time.sleep(120)  # killed here, before create_commit
"""


def test_killed_push_leaves_main_unchanged_and_retry_reuses_blobs(
    api, server, tmp_path, hf_cache, caplog
):
    folder = tmp_path / "push"
    (folder / "data").mkdir(parents=True)
    content = os.urandom(100 * 1024)  # multipart: 4 parts
    (folder / "data" / "big.parquet").write_bytes(content)
    (folder / "README.md").write_text("# pushed\n")
    head = api.dataset_info(REPO).sha

    env = {**os.environ, **server.client_env, "HF_HOME": str(tmp_path / "hf-home")}
    child = _fast.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(_UPLOAD_THEN_HANG),
            server.endpoint,
            str(folder / "data" / "big.parquet"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "uploaded"
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()

    assert api.dataset_info(REPO).sha == head
    assert set(_files(api)) == {".gitattributes"}
    answer, _, _ = post_lfs_batch_info(
        [UploadInfo.from_path(str(folder / "data" / "big.parquet"))],
        token="test-token",
        repo_type="dataset",
        repo_id=REPO,
        endpoint=api.endpoint,
    )
    assert "actions" not in answer[0]  # the server reports the blob as already present

    caplog.set_level(logging.INFO, logger="uvicorn.access")
    api.upload_folder(folder_path=folder, repo_id=REPO, repo_type="dataset")
    assert _lfs_upload_requests(caplog) == []  # nothing uploaded again
    assert _read(api, "data/big.parquet", hf_cache) == content


def test_readers_never_see_a_half_applied_commit(api):
    paths = [f"shard-{i:02d}.txt" for i in range(20)]
    api.create_commit(
        REPO,
        [CommitOperationAdd(p, b"v0") for p in paths],
        commit_message="v0",
        repo_type="dataset",
    )
    done = threading.Event()

    def write() -> None:
        try:
            for version in range(1, 6):
                api.create_commit(
                    REPO,
                    [CommitOperationAdd(p, f"v{version}".encode()) for p in paths],
                    commit_message=f"v{version}",
                    repo_type="dataset",
                )
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    snapshots = 0
    while not done.is_set() or snapshots == 0:
        blob_ids = {
            e.blob_id
            for e in api.list_repo_tree(REPO, repo_type="dataset")
            if isinstance(e, RepoFile) and e.path.startswith("shard-")
        }
        assert len(blob_ids) == 1, "a reader saw files from two commits"
        snapshots += 1
    writer.join()
    assert len(api.list_repo_commits(REPO, repo_type="dataset")) == 7
