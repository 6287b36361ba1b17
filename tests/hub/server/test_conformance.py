"""Conformance: the real huggingface_hub client, call by call, for models, datasets and spaces.

Every HfApi and HfFileSystem call the client offers for repositories, files, refs
and history runs against the server in token mode, and each result is checked.
`datasets` (the anchor) pushes and loads through the server in a subprocess.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationCopy,
    HfApi,
    HfFileSystem,
    RepoFile,
    RepoFolder,
    get_hf_file_metadata,
    hf_hub_download,
    hf_hub_url,
    snapshot_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from dagster_ds.hub.server import LocalHubServer
from tests import _fast

TOKEN = "hf_conformance_token"
TYPES = ["model", "dataset", "space"]


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[LocalHubServer]:
    with LocalHubServer(
        tmp_path / "hub",
        token=TOKEN,
        lfs_threshold=2048,
        multipart_threshold=8192,
        multipart_chunk_size=4096,
    ) as server:
        yield server


@pytest.fixture
def api(hub: LocalHubServer) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=TOKEN)


def _create(api: HfApi, repo: str, repo_type: str, **kwargs) -> None:
    sdk = "static" if repo_type == "space" else None
    api.create_repo(repo, repo_type=repo_type, space_sdk=sdk, **kwargs)


@pytest.mark.parametrize("repo_type", TYPES)
def test_hf_api_repositories(api: HfApi, hub: LocalHubServer, repo_type: str):
    assert api.whoami()["name"] == "user"
    url = api.create_repo(
        "user/a", repo_type=repo_type, space_sdk="static" if repo_type == "space" else None
    )
    assert url.repo_id == "user/a"
    assert url.repo_type == repo_type
    assert url.endpoint == hub.endpoint
    _create(api, "org/private", repo_type, private=True)
    again = api.create_repo(
        "user/a",
        repo_type=repo_type,
        exist_ok=True,
        space_sdk="static" if repo_type == "space" else None,
    )
    assert again.repo_id == "user/a"
    with pytest.raises(HfHubHTTPError) as caught:
        _create(api, "user/a", repo_type)
    assert caught.value.response.status_code == 409
    assert api.repo_exists("user/a", repo_type=repo_type)
    assert not api.repo_exists("user/none", repo_type=repo_type)
    info = api.repo_info("user/a", repo_type=repo_type)
    assert info.id == "user/a"
    assert info.private is False
    typed = {"model": api.model_info, "dataset": api.dataset_info, "space": api.space_info}[
        repo_type
    ]
    assert typed("org/private").private is True
    lister = {"model": api.list_models, "dataset": api.list_datasets, "space": api.list_spaces}[
        repo_type
    ]
    assert [r.id for r in lister()] == ["org/private", "user/a"]
    assert [r.id for r in lister(author="org")] == ["org/private"]
    assert [r.id for r in lister(search="a", limit=1)] == ["org/private"]
    api.update_repo_settings("org/private", private=False, repo_type=repo_type)
    anonymous = HfApi(endpoint=hub.endpoint, token=False)
    with pytest.raises(HfHubHTTPError):  # token mode: nothing without the token
        anonymous.repo_info("org/private", repo_type=repo_type)
    api.update_repo_settings("org/private", private=True, repo_type=repo_type)
    assert typed("org/private").private is True
    api.auth_check("org/private", repo_type=repo_type, write=True)
    api.move_repo("org/private", "org/renamed", repo_type=repo_type)
    assert api.repo_exists("org/renamed", repo_type=repo_type)
    copy = api.duplicate_repo("org/renamed", to_id="user/dup", repo_type=repo_type)
    assert copy.repo_id == "user/dup"
    api.delete_repo("org/renamed", repo_type=repo_type)
    api.delete_repo("org/renamed", repo_type=repo_type, missing_ok=True)
    with pytest.raises(RepositoryNotFoundError):
        api.delete_repo("org/renamed", repo_type=repo_type)
    assert [r.id for r in lister()] == ["user/a", "user/dup"]


@pytest.mark.parametrize("repo_type", TYPES)
def test_hf_api_files_refs_and_history(
    api: HfApi, hub: LocalHubServer, repo_type: str, tmp_path: Path
):
    repo = "user/files"
    _create(api, repo, repo_type)
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "small.txt").write_text("small")
    (folder / "sub" / "large.bin").write_bytes(os.urandom(20_000))  # multipart LFS
    (folder / "skip.log").write_text("skip")
    first = api.upload_folder(
        folder_path=folder, repo_id=repo, repo_type=repo_type, ignore_patterns=["*.log"]
    )
    assert len(first.oid) == 40
    assert first.commit_url.endswith(f"/commit/{first.oid}")
    one = api.upload_file(
        path_or_fileobj=b"\0bin", path_in_repo="one.bin", repo_id=repo, repo_type=repo_type
    )
    assert one.oid == api.repo_info(repo, repo_type=repo_type).sha
    copied = api.create_commit(
        repo,
        [
            CommitOperationCopy("sub/large.bin", "copy/large.bin"),
            CommitOperationAdd("gone.txt", b"soon gone"),
        ],
        commit_message="copy",
        repo_type=repo_type,
    )
    assert api.file_exists(repo, "copy/large.bin", repo_type=repo_type)
    assert not api.file_exists(repo, "missing.txt", repo_type=repo_type)
    api.delete_file("gone.txt", repo, repo_type=repo_type)
    api.delete_folder("copy", repo, repo_type=repo_type)
    files = api.list_repo_files(repo, repo_type=repo_type)
    assert sorted(files) == [".gitattributes", "one.bin", "small.txt", "sub/large.bin"]
    tree = list(api.list_repo_tree(repo, repo_type=repo_type, expand=True))
    kinds = {e.path: type(e) for e in tree}
    assert kinds["sub"] is RepoFolder
    assert kinds["small.txt"] is RepoFile
    large = next(
        e for e in api.list_repo_tree(repo, "sub", repo_type=repo_type) if isinstance(e, RepoFile)
    )
    assert large.lfs is not None
    assert large.lfs.size == 20_000
    infos = api.get_paths_info(repo, ["small.txt", "sub", "nope"], repo_type=repo_type, expand=True)
    assert [i.path for i in infos] == ["small.txt", "sub"]
    url = hf_hub_url(repo, "sub/large.bin", repo_type=repo_type, endpoint=hub.endpoint)
    meta = get_hf_file_metadata(url, token=TOKEN)
    assert meta.size == 20_000
    assert meta.commit_hash == api.repo_info(repo, repo_type=repo_type).sha
    local = api.hf_hub_download(
        repo, "sub/large.bin", repo_type=repo_type, cache_dir=tmp_path / "c"
    )
    assert Path(local).read_bytes() == (folder / "sub" / "large.bin").read_bytes()
    snap = snapshot_download(
        repo,
        repo_type=repo_type,
        cache_dir=tmp_path / "s",
        endpoint=hub.endpoint,
        token=TOKEN,
        allow_patterns=["*.txt"],
    )
    assert sorted(p.name for p in Path(snap).rglob("*") if p.is_file()) == ["small.txt"]
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(
            repo,
            "nope.txt",
            repo_type=repo_type,
            cache_dir=tmp_path / "c",
            endpoint=hub.endpoint,
            token=TOKEN,
        )

    api.create_branch(repo, branch="dev", repo_type=repo_type, revision=first.oid)
    api.create_branch(repo, branch="dev", repo_type=repo_type, exist_ok=True)
    api.create_tag(repo, tag="v1", repo_type=repo_type, revision=copied.oid, tag_message="one")
    assert api.revision_exists(repo, "dev", repo_type=repo_type)
    assert not api.revision_exists(repo, "nope", repo_type=repo_type)
    pr = api.create_commit(
        repo,
        [CommitOperationAdd("pr.txt", b"pr")],
        commit_message="pr",
        repo_type=repo_type,
        create_pr=True,
    )
    assert pr.pr_num == 1
    refs = api.list_repo_refs(repo, repo_type=repo_type, include_pull_requests=True)
    assert sorted(b.name for b in refs.branches) == ["dev", "main"]
    assert [t.name for t in refs.tags] == ["v1"]
    assert [p.ref for p in refs.pull_requests or []] == ["refs/pr/1"]
    assert api.list_repo_files(repo, repo_type=repo_type, revision="refs/pr/1").count("pr.txt") == 1
    assert "pr.txt" not in api.list_repo_files(repo, repo_type=repo_type)
    assert api.repo_info(repo, repo_type=repo_type, revision="dev").sha == first.oid
    commits = api.list_repo_commits(repo, repo_type=repo_type)
    assert [c.title for c in commits][-2:] == [
        "Upload folder using huggingface_hub",
        "initial commit",
    ]
    assert len(commits) == 6
    with pytest.raises(RevisionNotFoundError):
        api.list_repo_commits(repo, repo_type=repo_type, revision="nope")
    api.delete_tag(repo, tag="v1", repo_type=repo_type)
    api.delete_branch(repo, branch="dev", repo_type=repo_type)
    api.super_squash_history(repo, repo_type=repo_type, commit_message="squash")
    assert [c.title for c in api.list_repo_commits(repo, repo_type=repo_type)] == ["squash"]
    assert sorted(api.list_repo_files(repo, repo_type=repo_type)) == sorted(files)


@pytest.mark.parametrize("repo_type", TYPES)
def test_hf_file_system(api: HfApi, hub: LocalHubServer, repo_type: str):
    repo = "user/fs"
    _create(api, repo, repo_type)
    api.upload_file(
        path_or_fileobj=b"0123456789", path_in_repo="dir/a.txt", repo_id=repo, repo_type=repo_type
    )
    fs = HfFileSystem(endpoint=hub.endpoint, token=TOKEN)
    root = repo if repo_type == "model" else f"{repo_type}s/{repo}"
    assert fs.exists(f"{root}/dir/a.txt")
    assert fs.isdir(f"{root}/dir")
    assert fs.isfile(f"{root}/dir/a.txt")
    assert fs.info(f"{root}/dir/a.txt")["size"] == 10
    assert sorted(str(p) for p in fs.ls(root, detail=False)) == [
        f"{root}/.gitattributes",
        f"{root}/dir",
    ]
    assert fs.glob(f"{root}/**/*.txt") == [f"{root}/dir/a.txt"]
    assert sorted(fs.find(root)) == [f"{root}/.gitattributes", f"{root}/dir/a.txt"]
    assert fs.cat_file(f"{root}/dir/a.txt", start=2, end=5) == b"234"
    with fs.open(f"{root}/dir/a.txt", "rb") as f:
        f.seek(7)
        assert f.read() == b"789"
    with fs.open(f"{root}/dir/b.txt", "wb") as f:
        f.write(b"written through fsspec")  # pyright: ignore[reportArgumentType]
    assert fs.cat_file(f"{root}/dir/b.txt") == b"written through fsspec"
    fs.rm(f"{root}/dir/a.txt")
    assert not fs.exists(f"{root}/dir/a.txt")
    assert getattr(fs.resolve_path(f"{root}@main/dir"), "path_in_repo", None) == "dir"


ANCHOR = """
import json, sys
import datasets

datasets.config.USE_PARQUET_EXPORT = False
rows = [{"text": "a", "label": 0}, {"text": "bb", "label": 1}]
features = datasets.Features(
    {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
)
ds = datasets.Dataset.from_list(rows, features=features)
ds.push_to_hub("user/anchor", private=True)
datasets.DatasetDict({"test": ds}).push_to_hub("user/anchor", config_name="other")
back = datasets.load_dataset("user/anchor", split="train")
other = datasets.load_dataset("user/anchor", "other", split="test")
print(json.dumps({"rows": back.to_list(), "names": back.features["label"].names,
                  "other": other.to_list()}))
"""


def test_the_anchor_pushes_and_loads_in_token_mode(hub: LocalHubServer, tmp_path: Path):
    env = {
        **os.environ,
        **hub.client_env,
        "HF_TOKEN": TOKEN,
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_DATASETS_CACHE": str(tmp_path / "datasets-cache"),
    }
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        env.pop(name, None)
    done = _fast.run(
        [sys.executable, "-c", ANCHOR],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = [{"text": "a", "label": 0}, {"text": "bb", "label": 1}]
    assert result == {"rows": expected, "names": ["neg", "pos"], "other": expected}
    assert HfApi(endpoint=hub.endpoint, token=TOKEN).dataset_info("user/anchor").private is True
