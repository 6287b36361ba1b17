"""Reading from the local Hub: downloads with ranges, tree listings, paths info, HfFileSystem."""

import hashlib
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfFileSystem, RepoFile, RepoFolder
from huggingface_hub.file_download import get_hf_file_metadata, hf_hub_url

REPO = "user/demo"
LFS_CONTENT = bytes(range(256)) * 40  # 10,240 bytes, binary: stored with LFS
FILES = {
    "README.md": b"# Demo\n",
    "data/train-00000-of-00002.parquet": LFS_CONTENT,
    "data/train-00001-of-00002.parquet": b"PAR1 second shard",
    "data/extra/notes.txt": b"notes",
}


@pytest.fixture
def repo(hub_api):
    hub_api.create_repo(REPO, repo_type="dataset")
    return hub_api.create_commit(
        REPO,
        [CommitOperationAdd(path, content) for path, content in FILES.items()],
        commit_message="Add files",
        repo_type="dataset",
    )


def _get(url: str, headers: dict[str, str]) -> tuple[int, Message, bytes]:
    """Status, headers (case-insensitive) and body of a GET."""
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.headers, e.read()


def test_hf_hub_download_and_metadata(hub_api, repo, local_hub, hf_cache):
    lfs_path = "data/train-00000-of-00002.parquet"
    local = hub_api.hf_hub_download(REPO, lfs_path, repo_type="dataset", cache_dir=hf_cache)
    assert Path(local).read_bytes() == LFS_CONTENT
    assert repo.oid in local  # cached under the commit the revision resolved to

    url = hf_hub_url(REPO, lfs_path, repo_type="dataset", endpoint=local_hub.endpoint)
    meta = get_hf_file_metadata(url)
    assert meta.commit_hash == repo.oid
    assert meta.etag == hashlib.sha256(LFS_CONTENT).hexdigest()  # X-Linked-Etag
    assert meta.size == len(LFS_CONTENT)  # X-Linked-Size

    readme = hf_hub_url(REPO, "README.md", repo_type="dataset", endpoint=local_hub.endpoint)
    meta = get_hf_file_metadata(readme)
    git_oid = hashlib.sha1(b"blob 7\0# Demo\n").hexdigest()
    assert (meta.etag, meta.size) == (git_oid, 7)

    by_commit = hub_api.hf_hub_download(
        REPO, "README.md", repo_type="dataset", revision=repo.oid, cache_dir=hf_cache
    )
    assert Path(by_commit).read_bytes() == FILES["README.md"]


def test_range_requests(repo, local_hub):
    url = hf_hub_url(
        REPO, "data/train-00000-of-00002.parquet", repo_type="dataset", endpoint=local_hub.endpoint
    )
    status, headers, body = _get(url, {"Range": "bytes=10-19"})
    assert status == 206
    assert headers["Content-Range"] == f"bytes 10-19/{len(LFS_CONTENT)}"
    assert headers["X-Repo-Commit"] == repo.oid
    assert body == LFS_CONTENT[10:20]
    assert _get(url, {"Range": "bytes=10200-"})[2] == LFS_CONTENT[10200:]
    assert _get(url, {"Range": "bytes=-5"})[2] == LFS_CONTENT[-5:]
    assert _get(url, {"Range": "bytes=10000-99999"})[2] == LFS_CONTENT[10000:]
    status, headers, _ = _get(url, {"Range": "bytes=99999-"})
    assert status == 416
    assert headers["Content-Range"] == f"bytes */{len(LFS_CONTENT)}"
    status, _, body = _get(url, {})
    assert (status, body) == (200, LFS_CONTENT)


def test_list_repo_tree(hub_api, repo):
    root = list(hub_api.list_repo_tree(REPO, repo_type="dataset"))
    assert [(type(e).__name__, e.path) for e in root] == [
        ("RepoFolder", "data"),
        ("RepoFile", ".gitattributes"),
        ("RepoFile", "README.md"),
    ]
    data = list(hub_api.list_repo_tree(REPO, "data", repo_type="dataset"))
    assert [e.path for e in data] == [
        "data/extra",
        "data/train-00000-of-00002.parquet",
        "data/train-00001-of-00002.parquet",
    ]
    everything = list(hub_api.list_repo_tree(REPO, repo_type="dataset", recursive=True))
    assert {e.path for e in everything if isinstance(e, RepoFile)} == {".gitattributes", *FILES}
    assert {e.path for e in everything if isinstance(e, RepoFolder)} == {"data", "data/extra"}

    shard = next(e for e in data if e.path.endswith("00000-of-00002.parquet"))
    assert isinstance(shard, RepoFile)
    assert shard.size == len(LFS_CONTENT)
    assert shard.lfs is not None
    assert shard.lfs.sha256 == hashlib.sha256(LFS_CONTENT).hexdigest()

    expanded = list(hub_api.list_repo_tree(REPO, repo_type="dataset", expand=True))
    assert all(e.last_commit is not None for e in expanded)
    assert {e.path: e.last_commit.oid for e in expanded if e.last_commit} == {
        "data": repo.oid,
        ".gitattributes": hub_api.list_repo_commits(REPO, repo_type="dataset")[-1].commit_id,
        "README.md": repo.oid,
    }
    assert hub_api.list_repo_files(REPO, repo_type="dataset") == sorted([".gitattributes", *FILES])


def test_get_paths_info(hub_api, repo):
    infos = hub_api.get_paths_info(
        REPO, ["README.md", "data", "missing.txt"], repo_type="dataset", expand=True
    )
    assert [(type(i).__name__, i.path) for i in infos] == [
        ("RepoFile", "README.md"),
        ("RepoFolder", "data"),
    ]
    assert all(i.last_commit and i.last_commit.oid == repo.oid for i in infos)


def test_hf_file_system(hub_api, repo, local_hub):
    fs = HfFileSystem(endpoint=local_hub.endpoint, token="test-token")
    root = f"datasets/{REPO}"
    assert sorted(str(p) for p in fs.ls(root, detail=False)) == [
        f"{root}/.gitattributes",
        f"{root}/README.md",
        f"{root}/data",
    ]
    info = fs.info(f"{root}/data/train-00000-of-00002.parquet")
    assert (info["type"], info["size"]) == ("file", len(LFS_CONTENT))
    assert fs.isdir(f"{root}/data/extra")
    assert fs.glob(f"hf://{root}/data/train-*") == [
        f"{root}/data/train-00000-of-00002.parquet",
        f"{root}/data/train-00001-of-00002.parquet",
    ]
    assert sorted(fs.find(f"{root}/data")) == [
        f"{root}/data/extra/notes.txt",
        f"{root}/data/train-00000-of-00002.parquet",
        f"{root}/data/train-00001-of-00002.parquet",
    ]
    with fs.open(f"{root}/data/train-00000-of-00002.parquet", "rb", block_size=1024) as f:
        f.seek(5000)
        assert f.read(100) == LFS_CONTENT[5000:5100]  # a ranged read
    assert fs.cat(f"{root}/README.md") == FILES["README.md"]
    assert fs.read_bytes(f"{root}/data/train-00000-of-00002.parquet") == LFS_CONTENT

    hub_api.create_branch(REPO, branch="dev", repo_type="dataset")
    hub_api.upload_file(
        path_or_fileobj=b"dev only",
        path_in_repo="dev.txt",
        repo_id=REPO,
        repo_type="dataset",
        revision="dev",
    )
    fs.invalidate_cache()
    assert fs.cat(f"{root}@dev/dev.txt") == b"dev only"
    fs.pipe_file(f"{root}/written.txt", b"written through fsspec")  # writing is a commit
    latest = hub_api.list_repo_commits(REPO, repo_type="dataset")[0]
    assert latest.title == "Upload written.txt with huggingface_hub"
    assert fs.cat(f"{root}/written.txt") == b"written through fsspec"
    fs.rm(f"{root}/written.txt")
    assert "written.txt" not in hub_api.list_repo_files(REPO, repo_type="dataset")
    assert not fs.exists(f"{root}/dev.txt")
    with pytest.raises(FileNotFoundError):
        fs.info(f"{root}/nope.txt")
    with pytest.raises(FileNotFoundError):
        fs.ls("datasets/user/missing")
