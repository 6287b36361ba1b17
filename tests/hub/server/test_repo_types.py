"""Models, datasets and spaces behave alike through the real client (downloads, LFS, trees)."""

from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfApi, snapshot_download

TYPES = ["model", "dataset", "space"]


@pytest.mark.parametrize("repo_type", TYPES)
def test_every_repo_type_uploads_lfs_and_downloads(repo_type, hub_api: HfApi, hf_cache: Path):
    repo = f"user/{repo_type}-demo"
    hub_api.create_repo(
        repo, repo_type=repo_type, space_sdk="static" if repo_type == "space" else None
    )
    hub_api.create_commit(
        repo,
        [
            CommitOperationAdd("weights.bin", b"\0binary" * 100),
            CommitOperationAdd("docs/notes.txt", b"hello"),
        ],
        commit_message="add",
        repo_type=repo_type,
    )
    local = hub_api.hf_hub_download(repo, "weights.bin", repo_type=repo_type, cache_dir=hf_cache)
    assert Path(local).read_bytes() == b"\0binary" * 100
    folder = snapshot_download(
        repo, repo_type=repo_type, cache_dir=hf_cache, endpoint=hub_api.endpoint, token="t"
    )
    assert (Path(folder) / "docs" / "notes.txt").read_bytes() == b"hello"
    info = hub_api.repo_info(repo, repo_type=repo_type, files_metadata=True)
    files = {s.rfilename: s for s in getattr(info, "siblings", None) or []}
    assert files["weights.bin"].lfs is not None
    assert files["docs/notes.txt"].lfs is None
    paths = [e.path for e in hub_api.list_repo_tree(repo, repo_type=repo_type, recursive=True)]
    assert paths == ["docs", ".gitattributes", "docs/notes.txt", "weights.bin"]
