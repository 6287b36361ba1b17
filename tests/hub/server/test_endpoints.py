"""move_repo, super_squash_history, duplicate_repo and auth_check through the real client."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

from dagster_ds.hub.server import LocalHubServer


def _seed(api: HfApi, repo: str, repo_type: str = "dataset") -> None:
    api.create_repo(repo, repo_type=repo_type, space_sdk="static" if repo_type == "space" else None)
    for i in range(3):
        api.create_commit(
            repo,
            [CommitOperationAdd(f"f{i}.bin", b"\0data %d" % i)],
            commit_message=f"c{i}",
            repo_type=repo_type,
        )


@pytest.mark.parametrize("repo_type", ["model", "dataset", "space"])
def test_move_repo(hub_api: HfApi, repo_type: str, hf_cache: Path):
    _seed(hub_api, "user/old", repo_type)
    hub_api.move_repo("user/old", "org/new", repo_type=repo_type)
    assert not hub_api.repo_exists("user/old", repo_type=repo_type)
    files = hub_api.list_repo_files("org/new", repo_type=repo_type)
    assert sorted(files) == [".gitattributes", "f0.bin", "f1.bin", "f2.bin"]
    assert len(hub_api.list_repo_commits("org/new", repo_type=repo_type)) == 4
    local = hub_api.hf_hub_download("org/new", "f2.bin", repo_type=repo_type, cache_dir=hf_cache)
    assert Path(local).read_bytes() == b"\0data 2"
    _seed(hub_api, "user/taken", repo_type)
    with pytest.raises(HfHubHTTPError) as caught:
        hub_api.move_repo("org/new", "user/taken", repo_type=repo_type)
    assert caught.value.response.status_code == 409
    with pytest.raises(RepositoryNotFoundError):
        hub_api.move_repo("user/none", "user/none2", repo_type=repo_type)


def test_super_squash_history(hub_api: HfApi, hf_cache: Path):
    _seed(hub_api, "user/sq")
    before = hub_api.list_repo_files("user/sq", repo_type="dataset")
    hub_api.create_tag("user/sq", tag="v1", repo_type="dataset")
    hub_api.super_squash_history("user/sq", repo_type="dataset", commit_message="squashed")
    commits = hub_api.list_repo_commits("user/sq", repo_type="dataset")
    assert [c.title for c in commits] == ["squashed"]
    assert hub_api.list_repo_files("user/sq", repo_type="dataset") == before
    tagged = hub_api.list_repo_commits("user/sq", repo_type="dataset", revision="v1")
    assert len(tagged) == 4  # tags keep the old history
    local = hub_api.hf_hub_download("user/sq", "f1.bin", repo_type="dataset", cache_dir=hf_cache)
    assert Path(local).read_bytes() == b"\0data 1"
    with pytest.raises(HfHubHTTPError):
        hub_api.super_squash_history("user/sq", repo_type="dataset", branch="v1")


def test_duplicate_repo(hub_api: HfApi, local_hub: LocalHubServer, hf_cache: Path):
    _seed(hub_api, "org/src")
    url = hub_api.duplicate_repo("org/src", to_id="user/copy", repo_type="dataset", private=True)
    assert url.repo_id == "user/copy"
    assert url.files_copy_pending is False
    assert hub_api.dataset_info("user/copy").private is True
    local = hub_api.hf_hub_download("user/copy", "f0.bin", repo_type="dataset", cache_dir=hf_cache)
    assert Path(local).read_bytes() == b"\0data 0"
    again = hub_api.duplicate_repo("org/src", to_id="user/copy", repo_type="dataset", exist_ok=True)
    assert again.repo_id == "user/copy"
    hub_api.delete_repo("org/src", repo_type="dataset")
    local = hub_api.hf_hub_download(
        "user/copy", "f1.bin", repo_type="dataset", cache_dir=hf_cache / "2"
    )
    assert Path(local).read_bytes() == b"\0data 1"  # the copy keeps its blobs


def test_auth_check(hub_api: HfApi, local_hub: LocalHubServer):
    hub_api.create_repo("org/priv", repo_type="dataset", private=True)
    hub_api.auth_check("org/priv", repo_type="dataset")
    hub_api.auth_check("org/priv", repo_type="dataset", write=True)
    anonymous = HfApi(endpoint=local_hub.endpoint, token=False)
    with pytest.raises(RepositoryNotFoundError):
        anonymous.auth_check("org/priv", repo_type="dataset")
    with pytest.raises(RepositoryNotFoundError):
        hub_api.auth_check("org/missing", repo_type="dataset")


def test_a_store_of_the_previous_format_keeps_working(tmp_path: Path, hf_cache: Path):
    """Repos written before commits kept only changes (and before blob markers)."""
    data = tmp_path / "hub"
    with LocalHubServer(data) as hub:
        api = HfApi(endpoint=hub.endpoint, token="t")
        _seed(api, "user/legacy")
        api.create_repo("user/other", repo_type="dataset")
    repo_dir = data / "repos" / "datasets" / "user" / "legacy"
    shutil.rmtree(repo_dir / "objects")
    shutil.rmtree(data / "repos" / "datasets" / "user" / "other" / "objects")
    for commit_file in (repo_dir / "commits").glob("*.json"):  # whole trees, no changes
        commit = json.loads(commit_file.read_text())
        full = _full_tree(repo_dir, commit)
        commit.pop("changes", None)
        commit.pop("chain", None)
        commit["files"] = full
        commit_file.write_text(json.dumps(commit))
    (data / "hub.json").write_text(json.dumps({"format": "dagster_ds.testing.hub/1"}))
    with LocalHubServer(data) as hub:
        assert json.loads((data / "hub.json").read_text())["format"] == "dagster_ds.hub.server/2"
        api = HfApi(endpoint=hub.endpoint, token="t")
        tree = api.list_repo_tree("user/legacy", repo_type="dataset", expand=True)
        titles = {e.path: e.last_commit.title for e in tree if e.last_commit}
        assert titles == {
            ".gitattributes": "initial commit",
            "f0.bin": "c0",
            "f1.bin": "c1",
            "f2.bin": "c2",
        }
        api.delete_repo("user/other", repo_type="dataset")
        local = api.hf_hub_download(
            "user/legacy", "f0.bin", repo_type="dataset", cache_dir=hf_cache
        )
        assert Path(local).read_bytes() == b"\0data 0"


def _full_tree(repo_dir: Path, commit: dict) -> dict:
    chain = []
    while True:
        chain.append(commit)
        if ("files" in commit and commit.get("chain", 0) == 0) or not commit["parents"]:
            break
        commit = json.loads((repo_dir / "commits" / f"{commit['parents'][0]}.json").read_text())
    files: dict = {}
    for item in reversed(chain):
        if "files" in item and item is chain[-1]:
            files = dict(item["files"])
        for path, entry in (item.get("changes") or {}).items():
            if entry is None:
                files.pop(path, None)
            else:
                files[path] = entry
    return files
