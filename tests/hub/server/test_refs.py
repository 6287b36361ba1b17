"""Branches and tags: the default branch cannot be deleted, and each name space is its own."""

import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError

REPO = "user/refs"


@pytest.fixture
def repo(hub_api: HfApi) -> str:
    hub_api.create_repo(REPO, repo_type="dataset")
    hub_api.create_branch(REPO, branch="dev", repo_type="dataset")
    hub_api.create_tag(REPO, tag="v1", repo_type="dataset")
    return REPO


def _refs(api: HfApi) -> tuple[list[str], list[str]]:
    refs = api.list_repo_refs(REPO, repo_type="dataset")
    return sorted(b.name for b in refs.branches), sorted(t.name for t in refs.tags)


@pytest.mark.parametrize("spelling", ["main", "refs/heads/main"])
def test_the_default_branch_cannot_be_deleted(hub_api: HfApi, repo: str, spelling: str):
    with pytest.raises(HfHubHTTPError) as caught:
        hub_api.delete_branch(repo, branch=spelling, repo_type="dataset")
    assert caught.value.response.status_code == 400
    assert _refs(hub_api) == (["dev", "main"], ["v1"])
    assert [d.id for d in hub_api.list_datasets()] == [REPO]


def test_delete_branch_never_deletes_a_tag_and_delete_tag_never_a_branch(hub_api: HfApi, repo: str):
    with pytest.raises(HfHubHTTPError):
        hub_api.delete_branch(repo, branch="refs/tags/v1", repo_type="dataset")
    with pytest.raises(HfHubHTTPError):
        hub_api.delete_branch(repo, branch="v1", repo_type="dataset")
    with pytest.raises(HfHubHTTPError):
        hub_api.delete_tag(repo, tag="refs/heads/dev", repo_type="dataset")
    with pytest.raises(HfHubHTTPError):
        hub_api.delete_tag(repo, tag="dev", repo_type="dataset")
    assert _refs(hub_api) == (["dev", "main"], ["v1"])
    hub_api.delete_branch(repo, branch="refs/heads/dev", repo_type="dataset")
    hub_api.delete_tag(repo, tag="refs/tags/v1", repo_type="dataset")
    assert _refs(hub_api) == (["main"], [])


def test_one_damaged_repo_does_not_break_the_listing(hub_api: HfApi, local_hub, repo: str):
    hub_api.create_repo("user/damaged", repo_type="dataset")
    refs = local_hub.data_dir / "repos" / "datasets" / "user" / "damaged" / "refs.json"
    refs.write_text("{}")  # as deleting main used to leave it
    assert [d.id for d in hub_api.list_datasets()] == [REPO]
