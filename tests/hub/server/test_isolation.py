"""Isolation and web safety: tokens, private content, browsers, exposure, names and paths."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import HfHubHTTPError

from dagster_ds.hub.server import LocalHubServer, LocalHubStartError

SECRET = b"the private content \0" * 50
SECRET_SHA = hashlib.sha256(SECRET).hexdigest()


def test_any_token_mode_never_accepts_no_token_for_writes_or_private_reads(
    local_hub: LocalHubServer, hub_api: HfApi, raw_client
):
    hub_api.create_repo("org/secret", repo_type="dataset", private=True)
    anonymous = raw_client(local_hub.endpoint, token=None)
    gone = anonymous.request(
        "DELETE", "/api/repos/delete", {"name": "secret", "organization": "org", "type": "dataset"}
    )
    assert gone.status == 401
    probe = anonymous.request(
        "POST", "/api/repos/create", {"name": "secret", "organization": "org", "type": "dataset"}
    )
    assert probe.status == 401  # not 409: the name of a private repo is not revealed
    assert anonymous.request("GET", "/api/datasets/org/secret").status == 404
    assert hub_api.repo_exists("org/secret", repo_type="dataset")


def _lfs_batch(raw, repo_path: str, oid: str, size: int):
    payload = {"operation": "upload", "objects": [{"oid": oid, "size": size}]}
    return raw.request("POST", f"/datasets/{repo_path}.git/info/lfs/objects/batch", payload)


def test_blobs_are_scoped_to_the_repos_that_hold_them(
    local_hub: LocalHubServer, hub_api: HfApi, raw_client
):
    hub_api.create_repo("org/secret", repo_type="dataset", private=True)
    hub_api.create_commit(
        "org/secret",
        [CommitOperationAdd("secret.bin", SECRET)],
        commit_message="secret",
        repo_type="dataset",
    )
    hub_api.create_repo("mallory/public", repo_type="dataset")
    raw = raw_client(local_hub.endpoint, token="mallory")
    answer = _lfs_batch(raw, "mallory/public", SECRET_SHA, len(SECRET)).json()
    assert "actions" in answer["objects"][0]  # "upload it": existence elsewhere is not revealed
    verify = raw.request(
        "POST", "/lfs-verify/dataset/mallory/public", {"oid": SECRET_SHA, "size": len(SECRET)}
    )
    assert verify.status == 404
    commit = (
        b'{"key":"header","value":{"summary":"steal"}}\n'
        b'{"key":"lfsFile","value":{"path":"x.bin","algo":"sha256","oid":"'
        + SECRET_SHA.encode()
        + b'","size":%d}}' % len(SECRET)
    )
    stolen = raw.request(
        "POST",
        "/api/datasets/mallory/public/commit/main",
        commit,
        content_type="application/x-ndjson",
    )
    assert stolen.status == 400
    assert "x.bin" not in hub_api.list_repo_files("mallory/public", repo_type="dataset")


def test_deleting_a_repo_collects_its_unshared_blobs(local_hub: LocalHubServer, hub_api: HfApi):
    hub_api.create_repo("org/secret", repo_type="dataset", private=True)
    hub_api.create_repo("org/other", repo_type="dataset")
    shared = b"shared \0" * 10
    for repo, content in (("org/secret", SECRET), ("org/secret", shared), ("org/other", shared)):
        hub_api.upload_file(
            path_or_fileobj=content,
            path_in_repo=f"{len(content)}.bin",
            repo_id=repo,
            repo_type="dataset",
        )
    blobs = local_hub.data_dir / "blobs"
    assert (blobs / SECRET_SHA[:2] / SECRET_SHA).exists()
    hub_api.delete_repo("org/secret", repo_type="dataset")
    assert not (blobs / SECRET_SHA[:2] / SECRET_SHA).exists()
    shared_sha = hashlib.sha256(shared).hexdigest()
    assert (blobs / shared_sha[:2] / shared_sha).exists()
    hub_api.create_repo("org/secret", repo_type="dataset", private=True)
    assert hub_api.list_repo_files("org/secret", repo_type="dataset") == [".gitattributes"]


@pytest.mark.parametrize(
    ("headers", "content_type", "status"),
    [
        ({"Origin": "http://evil.example"}, "text/plain", 403),
        ({"Origin": "http://evil.example"}, "application/json", 403),
        ({"Origin": "null"}, "application/json", 403),
        ({"Sec-Fetch-Site": "cross-site"}, "application/json", 403),
        ({}, "text/plain", 415),
        ({}, "application/x-www-form-urlencoded", 415),
        ({"Host": "evil.example"}, "application/json", 403),
        ({"Host": "rebind.example:8080"}, "application/json", 403),
    ],
)
def test_browsers_cannot_drive_the_hub(
    local_hub: LocalHubServer, raw_client, headers, content_type, status
):
    raw = raw_client(local_hub.endpoint)
    body = '{"name": "csrf", "type": "dataset"}'
    answer = raw.request("POST", "/api/repos/create", body, headers, content_type=content_type)
    assert answer.status == status, answer.body
    own = raw.request("POST", "/api/repos/create", body, {"Origin": local_hub.endpoint})
    assert own.status == 200


def test_a_rebinding_host_cannot_read_either(local_hub: LocalHubServer, raw_client):
    raw = raw_client(local_hub.endpoint)
    assert raw.request("GET", "/api/datasets", headers={"Host": "evil.example"}).status == 403
    assert (
        raw.request("GET", "/api/datasets", headers={"Host": f"localhost:{local_hub.port}"}).status
        == 200
    )


def test_lfs_urls_are_not_built_from_the_host_header(
    local_hub: LocalHubServer, hub_api, raw_client
):
    hub_api.create_repo("user/urls", repo_type="dataset")
    raw = raw_client(local_hub.endpoint)
    payload = {"operation": "upload", "objects": [{"oid": "a" * 64, "size": 10}]}
    answer = raw.request(
        "POST", "/datasets/user/urls.git/info/lfs/objects/batch", payload, {"Host": "localhost:1"}
    )
    href = answer.json()["objects"][0]["actions"]["upload"]["href"]
    assert href.startswith(f"{local_hub.endpoint}/lfs-uploads/")


def test_network_exposure_and_token_strictness(tmp_path: Path):
    with pytest.raises(LocalHubStartError, match="token"):
        LocalHubServer(tmp_path / "a", host="0.0.0.0")
    with pytest.raises(LocalHubStartError, match="empty"):
        LocalHubServer(tmp_path / "b", token="")
    with pytest.raises(LocalHubStartError, match="empty"):
        LocalHubServer(tmp_path / "c", token="   ")


def test_the_cli_is_strict_about_tokens_and_exposure(
    tmp_path: Path, hub_serve: Callable[..., Result]
):
    data_dir = str(tmp_path / "cli")
    empty_env = hub_serve("--data-dir", data_dir, token_env="")
    assert empty_env.exit_code == 1
    assert "empty" in empty_env.stderr
    empty_flag = hub_serve("--data-dir", data_dir, "--token", "")
    assert empty_flag.exit_code == 1
    assert "empty" in empty_flag.stderr
    exposed = hub_serve("--data-dir", data_dir, "--host", "0.0.0.0")
    assert exposed.exit_code == 1
    assert "token" in exposed.stderr


def test_the_cli_warns_when_the_token_is_on_the_command_line(tmp_path: Path):
    command = [
        str(Path(sys.executable).parent / "dagster-ds"),
        "hub",
        "serve",
        "--data-dir",
        str(tmp_path / "cli"),
        "--token",
        "visible-token",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("HF_ENDPOINT="):
                break
    finally:
        process.terminate()
        _, err = process.communicate(timeout=15)
    assert "process list" in err
    assert "DAGSTER_DS_HUB_TOKEN" in err
    assert "visible-token" not in err


@pytest.mark.parametrize(
    "name", ["abc\n", "abc\r", "a" * 97, "a--b", "a..b", "-abc", "abc.", "abc.git", "a\\b", "a b"]
)
def test_bad_repo_names_are_refused(raw, name):
    answer = raw.request("POST", "/api/repos/create", {"name": name, "type": "dataset"})
    assert answer.status == 400, (name, answer.body)


@pytest.mark.parametrize(
    "path",
    [
        "/lead.txt",
        "a/../b.txt",
        "a\\b.txt",
        "a\nb.txt",
        "a\rb.txt",
        "tab\there.txt",
        "x" * 256,
        "/".join(["d" * 200] * 6),
        ".git/config",
        "a//b",
    ],
)
def test_bad_paths_are_refused(hub_api: HfApi, raw, path):
    hub_api.create_repo("user/paths", repo_type="dataset", exist_ok=True)
    header = {"key": "header", "value": {"summary": "s"}}
    add = {"key": "file", "value": {"path": path, "content": "YQ==", "encoding": "base64"}}
    line = json.dumps(header) + "\n" + json.dumps(add)
    answer = raw.request(
        "POST", "/api/datasets/user/paths/commit/main", line, content_type="application/x-ndjson"
    )
    assert answer.status == 400, (path, answer.body)
    assert "path" in answer.json()["error"].lower()


def test_deleting_the_root_folder_is_refused(hub_api: HfApi):
    hub_api.create_repo("user/root", repo_type="dataset")
    hub_api.upload_file(
        path_or_fileobj=b"x", path_in_repo="a/x.txt", repo_id="user/root", repo_type="dataset"
    )
    with pytest.raises(HfHubHTTPError) as caught:
        hub_api.delete_folder("/", repo_id="user/root", repo_type="dataset")
    assert caught.value.response.status_code == 400
    assert sorted(hub_api.list_repo_files("user/root", repo_type="dataset")) == [
        ".gitattributes",
        "a/x.txt",
    ]
