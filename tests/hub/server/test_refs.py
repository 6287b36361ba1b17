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


# git check-ref-format's rules, plus the names that would make a revision ambiguous.
INVALID_NAMES = [
    "a\nb",
    "a\tb",
    "a\x7fb",
    "a b",
    "a~1",
    "a^",
    "a:b",
    "a?",
    "a*",
    "a[b",
    "a\\b",
    "a..b",
    "a@{1}",
    "@",
    "a/",
    "a//b",
    ".hidden",
    "dev/.hidden",
    "a.lock",
    "a.lock/b",
    "a.",
    "-a",
    "HEAD",
    "refs/heads/x",
    "0123456789abcdef0123456789abcdef01234567",
]


def _create(api: HfApi, repo: str, kind: str, name: str) -> None:
    if kind == "branch":
        api.create_branch(repo, branch=name, repo_type="dataset")
    else:
        api.create_tag(repo, tag=name, repo_type="dataset")


def test_invalid_branch_and_tag_names_are_refused_with_a_400(hub_api: HfApi, repo: str):
    """Every name against one repository (a server each would cost a second a name)."""
    not_refused: list[tuple[str, str, str]] = []
    for kind in ("branch", "tag"):
        for name in INVALID_NAMES:
            try:
                _create(hub_api, repo, kind, name)
            except HfHubHTTPError as error:
                if error.response.status_code != 400 or f"Invalid {kind} name" not in str(error):
                    not_refused.append((kind, name, str(error)[:200]))
            else:
                not_refused.append((kind, name, "accepted"))
    assert not_refused == []
    assert _refs(hub_api) == (["dev", "main"], ["v1"])


def test_an_empty_tag_name_is_refused(hub_api: HfApi, repo: str):
    with pytest.raises(HfHubHTTPError) as caught:
        hub_api.create_tag(repo, tag="", repo_type="dataset")
    assert caught.value.response.status_code == 400


@pytest.mark.parametrize("name", ["dev2/experiment", "v1.0", "feature/x-1_2", "v1@2", "été"])
def test_names_valid_for_git_are_accepted(hub_api: HfApi, repo: str, name: str):
    hub_api.create_branch(repo, branch=name, repo_type="dataset")
    hub_api.create_tag(repo, tag=f"t-{name}", repo_type="dataset")
    assert _refs(hub_api) == (sorted(["dev", "main", name]), sorted(["v1", f"t-{name}"]))


def test_a_branch_with_a_slash_can_be_written_and_read(hub_api: HfApi, repo: str, tmp_path):
    hub_api.create_branch(repo, branch="dev2/experiment", repo_type="dataset")
    hub_api.upload_file(
        path_or_fileobj=b"on the branch",
        path_in_repo="note.txt",
        repo_id=repo,
        repo_type="dataset",
        revision="dev2/experiment",
    )
    path = hub_api.hf_hub_download(
        repo, "note.txt", repo_type="dataset", revision="dev2/experiment", cache_dir=tmp_path
    )
    with open(path, "rb") as file:
        assert file.read() == b"on the branch"


@pytest.mark.parametrize(
    ("kind", "name", "existing"),
    [
        ("branch", "main/sub", "refs/heads/main"),
        ("branch", "dev/x", "refs/heads/dev"),
        ("tag", "v1/patch", "refs/tags/v1"),
    ],
)
def test_a_name_beside_an_existing_ref_s_path_is_refused_as_git_does(
    hub_api: HfApi, repo: str, kind: str, name: str, existing: str
):
    with pytest.raises(HfHubHTTPError) as caught:
        _create(hub_api, repo, kind, name)
    assert caught.value.response.status_code == 409
    assert repr(existing) in str(caught.value)
    assert _refs(hub_api) == (["dev", "main"], ["v1"])
    # A branch and a tag live in different name spaces: tag 'main/sub' is fine.
    hub_api.create_tag(repo, tag="main/sub", repo_type="dataset")
    hub_api.create_branch(repo, branch="v1/patch", repo_type="dataset")
