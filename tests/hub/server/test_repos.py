"""Repositories on the local Hub through the real huggingface_hub client."""

import logging
import re
import urllib.error
import urllib.request

import pytest
from huggingface_hub import CommitOperationAdd, HfApi, RepoFile
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from dagster_ds.hub.server import LocalHubServer

SHA = re.compile(r"^[0-9a-f]{40}$")


def _commit(api: HfApi, repo_id: str, path: str, content: bytes, **kwargs):
    return api.create_commit(
        repo_id,
        [CommitOperationAdd(path, content)],
        commit_message=f"add {path}",
        repo_type="dataset",
        **kwargs,
    )


def test_create_repo_and_info(hub_api, local_hub):
    url = hub_api.create_repo("user/demo", repo_type="dataset")
    assert url == f"{local_hub.endpoint}/datasets/user/demo"
    assert url.repo_id == "user/demo"
    info = hub_api.dataset_info("user/demo")
    assert info.id == "user/demo"
    assert SHA.match(info.sha or "")
    assert info.private is False
    assert [s.rfilename for s in info.siblings or []] == [".gitattributes"]

    hub_api.create_repo("user/model")
    model = hub_api.model_info("user/model", files_metadata=True)
    assert model.id == "user/model"
    assert model.siblings
    assert model.siblings[0].size == 2322
    assert model.siblings[0].blob_id


def test_list_repos(hub_api, local_hub):
    hub_api.create_repo("user/b-data", repo_type="dataset")
    hub_api.create_repo("user/a-data", repo_type="dataset")
    hub_api.create_repo("org/hidden", repo_type="dataset", private=True)
    hub_api.create_repo("user/a-model")
    assert [d.id for d in hub_api.list_datasets()] == ["org/hidden", "user/a-data", "user/b-data"]
    assert [d.id for d in hub_api.list_datasets(author="user", search="b-")] == ["user/b-data"]
    assert [m.id for m in hub_api.list_models()] == ["user/a-model"]
    anonymous = HfApi(endpoint=local_hub.endpoint, token=False)
    assert [d.id for d in anonymous.list_datasets()] == ["user/a-data", "user/b-data"]


def test_create_repo_without_namespace_uses_the_user(hub_api):
    url = hub_api.create_repo("solo", repo_type="dataset")
    assert url.repo_id == "user/solo"


def test_create_repo_exist_ok(hub_api):
    hub_api.create_repo("user/demo", repo_type="dataset")
    with pytest.raises(HfHubHTTPError) as info:
        hub_api.create_repo("user/demo", repo_type="dataset")
    assert info.value.response.status_code == 409
    url = hub_api.create_repo("user/demo", repo_type="dataset", exist_ok=True)
    assert url.repo_id == "user/demo"


def test_private_repo_is_hidden_without_token(hub_api, local_hub):
    hub_api.create_repo("user/secret", repo_type="dataset", private=True)
    assert hub_api.dataset_info("user/secret").private is True
    anonymous = HfApi(endpoint=local_hub.endpoint, token=False)
    with pytest.raises(RepositoryNotFoundError):
        anonymous.dataset_info("user/secret")
    hub_api.update_repo_settings("user/secret", repo_type="dataset", private=False)
    assert anonymous.dataset_info("user/secret").private is False


def test_delete_repo(hub_api):
    hub_api.create_repo("user/demo", repo_type="dataset")
    hub_api.delete_repo("user/demo", repo_type="dataset")
    assert not hub_api.repo_exists("user/demo", repo_type="dataset")
    with pytest.raises(RepositoryNotFoundError):
        hub_api.delete_repo("user/demo", repo_type="dataset")
    hub_api.delete_repo("user/demo", repo_type="dataset", missing_ok=True)
    hub_api.create_repo("user/demo", repo_type="dataset")  # the name is free again


def test_info_at_a_revision(hub_api):
    hub_api.create_repo("user/demo", repo_type="dataset")
    first = _commit(hub_api, "user/demo", "a.txt", b"one")
    second = _commit(hub_api, "user/demo", "b.txt", b"two")
    assert hub_api.dataset_info("user/demo").sha == second.oid
    old = hub_api.dataset_info("user/demo", revision=first.oid)
    assert old.sha == first.oid
    assert sorted(s.rfilename for s in old.siblings or []) == [".gitattributes", "a.txt"]
    assert hub_api.revision_exists("user/demo", "main", repo_type="dataset")
    assert not hub_api.revision_exists("user/demo", "nope", repo_type="dataset")


def test_refs_commits_branches_and_tags(hub_api):
    hub_api.create_repo("user/demo", repo_type="dataset")
    first = _commit(hub_api, "user/demo", "a.txt", b"one")
    hub_api.create_branch("user/demo", branch="dev", repo_type="dataset")
    hub_api.create_branch("user/demo", branch="dev", repo_type="dataset", exist_ok=True)
    second = _commit(hub_api, "user/demo", "b.txt", b"two", revision="dev")
    hub_api.create_tag("user/demo", tag="v1", revision=first.oid, repo_type="dataset")

    refs = hub_api.list_repo_refs("user/demo", repo_type="dataset")
    assert {(b.name, b.target_commit) for b in refs.branches} == {
        ("main", first.oid),
        ("dev", second.oid),
    }
    assert [(t.name, t.ref) for t in refs.tags] == [("v1", "refs/tags/v1")]
    assert refs.pull_requests is None

    commits = hub_api.list_repo_commits("user/demo", repo_type="dataset", revision="dev")
    assert [c.commit_id for c in commits[:2]] == [second.oid, first.oid]
    assert [c.title for c in commits] == ["add b.txt", "add a.txt", "initial commit"]
    assert commits[0].authors == ["user"]
    assert hub_api.dataset_info("user/demo", revision="v1").sha == first.oid

    hub_api.delete_branch("user/demo", branch="dev", repo_type="dataset")
    hub_api.delete_tag("user/demo", tag="v1", repo_type="dataset")
    refs = hub_api.list_repo_refs("user/demo", repo_type="dataset")
    assert [b.name for b in refs.branches] == ["main"]
    assert refs.tags == []


def test_errors_raise_the_clients_classes(hub_api, hf_cache):
    with pytest.raises(RepositoryNotFoundError):
        hub_api.dataset_info("user/missing")
    with pytest.raises(RepositoryNotFoundError):
        hub_api.hf_hub_download("user/missing", "a.txt", repo_type="dataset", cache_dir=hf_cache)
    with pytest.raises(RepositoryNotFoundError):
        list(hub_api.list_repo_tree("user/missing", repo_type="dataset"))

    hub_api.create_repo("user/demo", repo_type="dataset")
    with pytest.raises(RevisionNotFoundError):
        hub_api.dataset_info("user/demo", revision="nope")
    with pytest.raises(RevisionNotFoundError):
        list(hub_api.list_repo_tree("user/demo", repo_type="dataset", revision="nope"))
    with pytest.raises(RevisionNotFoundError):
        hub_api.hf_hub_download(
            "user/demo", ".gitattributes", repo_type="dataset", revision="nope", cache_dir=hf_cache
        )
    with pytest.raises(EntryNotFoundError):
        hub_api.hf_hub_download("user/demo", "missing.txt", repo_type="dataset", cache_dir=hf_cache)
    with pytest.raises(EntryNotFoundError):
        list(hub_api.list_repo_tree("user/demo", "no/such/folder", repo_type="dataset"))
    assert not hub_api.file_exists("user/demo", "missing.txt", repo_type="dataset")


def test_whoami(hub_api, local_hub):
    assert hub_api.whoami()["name"] == "user"
    # Any token works, but whoami needs one.
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"{local_hub.endpoint}/api/whoami-v2")
    assert info.value.code == 401
    info.value.close()


def test_invalid_card_yaml_is_rejected_before_upload(hub_api):
    hub_api.create_repo("user/demo", repo_type="dataset")
    with pytest.raises(ValueError, match=r"Invalid metadata in README\.md"):
        _commit(hub_api, "user/demo", "README.md", b"---\nconfigs: [unclosed\n---\n")


def test_token_mode_rejects_wrong_and_missing_tokens(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    with LocalHubServer(tmp_path / "hub", token="s3cret-token", access_log=True) as hub:
        good = HfApi(endpoint=hub.endpoint, token="s3cret-token")
        good.create_repo("user/demo", repo_type="dataset")
        assert good.dataset_info("user/demo").id == "user/demo"
        # LFS upload URLs carry no Authorization header (presigned, as on the Hub).
        good.upload_file(
            path_or_fileobj=b"PAR1",
            path_in_repo="x.parquet",
            repo_id="user/demo",
            repo_type="dataset",
        )
        (uploaded,) = good.get_paths_info("user/demo", "x.parquet", repo_type="dataset")
        assert isinstance(uploaded, RepoFile)
        assert uploaded.lfs is not None
        for api in (
            HfApi(endpoint=hub.endpoint, token="wrong-token"),
            HfApi(endpoint=hub.endpoint, token=False),
        ):
            with pytest.raises(HfHubHTTPError) as info:
                api.dataset_info("user/demo")
            error = info.value
            assert error.response.status_code == 401
            assert not isinstance(error, RepositoryNotFoundError)
            assert "s3cret-token" not in str(error) + error.response.text
            assert "wrong-token" not in str(error) + error.response.text
            assert "s3cret-token" not in str(dict(error.response.headers))
        with pytest.raises(HfHubHTTPError) as info:
            HfApi(endpoint=hub.endpoint, token="wrong-token").create_repo("user/other")
        assert info.value.response.status_code == 401
        assert "s3cret-token" not in repr(hub)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "s3cret-token" not in logged
    assert "wrong-token" not in logged
