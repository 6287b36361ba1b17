"""Resource limits: bodies streamed and capped, LFS batches capped, slow bodies timed out,
commits stored as changes, leftovers swept. Each bounded in time and memory."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, RepoFile

from dagster_ds.hub.server import LocalHubServer
from tests import _fast
from tests.hub.server.conftest import RawClient

MiB = 1024 * 1024
TOKEN = "limits-token"
BATCH = "/datasets/user/big.git/info/lfs/objects/batch"

_CHILD = """
import sys
from dagster_ds.hub.server import LocalHubServer
server = LocalHubServer(sys.argv[1], token=sys.argv[2]).start()
print(server.endpoint, flush=True)
sys.stdin.read()
server.stop()
"""


@pytest.fixture
def child_hub(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A local Hub in a child process (token mode), so its peak RSS can be read."""
    process = _fast.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path / "hub"), TOKEN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield process, process.stdout.readline().strip()
    finally:
        process.communicate("", timeout=30)


def _peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _send(endpoint: str, method: str, path: str, size: int, headers: dict[str, str]) -> int:
    """Send a ``size``-byte body generated on the fly; the status (0 if the server hung up)."""
    host, port = endpoint.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    chunk = b"\0" * MiB

    def body() -> Iterator[bytes]:
        sent = 0
        while sent < size:
            piece = chunk[: min(MiB, size - sent)]
            sent += len(piece)
            yield piece

    try:
        connection.request(
            method, path, body=body(), headers={**headers, "Content-Length": str(size)}
        )
        return connection.getresponse().status
    except (BrokenPipeError, ConnectionResetError):
        return 0
    finally:
        connection.close()


def _zeros_sha256(size: int) -> str:
    digest = hashlib.sha256()
    chunk = b"\0" * MiB
    for start in range(0, size, MiB):
        digest.update(chunk[: min(MiB, size - start)])
    return digest.hexdigest()


def test_big_bodies_are_streamed_and_capped_in_bounded_memory(child_hub, raw_client):
    process, endpoint = child_hub
    api = HfApi(endpoint=endpoint, token=TOKEN)
    api.create_repo("user/big", repo_type="dataset")
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    size = 640 * MiB  # over twice the RSS bound below: a server holding a body exceeds it
    raw = raw_client(endpoint, token=TOKEN)
    oid = _zeros_sha256(size)
    answer = raw.request(
        "POST", BATCH, {"operation": "upload", "objects": [{"oid": oid, "size": size}]}
    )
    href = answer.json()["objects"][0]["actions"]["upload"]["href"]
    upload_path = "/" + href.split("/", 3)[3]
    # A public completion URL given the whole body, without a token: refused after its small
    # limit.
    assert _send(endpoint, "POST", upload_path, size, {}) in (0, 413)
    # A 768 MiB commit: refused at the commit limit, never held in memory.
    assert _send(
        endpoint,
        "POST",
        "/api/datasets/user/big/commit/main",
        768 * MiB,
        {**auth, "Content-Type": "application/x-ndjson"},
    ) in (0, 413)
    # The real LFS upload: streamed to disk and verified.
    assert _send(endpoint, "PUT", upload_path, size, {}) == 200
    # A new connection: the first one sat idle through the upload, past the server's
    # keep-alive timeout (slow on a loaded machine), so the server may have closed it.
    raw = raw_client(endpoint, token=TOKEN)
    verify = raw.request("POST", "/lfs-verify/dataset/user/big", {"oid": oid, "size": size})
    assert verify.status == 200, verify.body
    assert _peak_rss_mb(process.pid) < 300


@pytest.fixture
def small_hub(tmp_path: Path) -> Iterator[LocalHubServer]:
    """A local Hub with tiny limits, so tests reach them fast."""
    with LocalHubServer(
        tmp_path / "hub",
        multipart_threshold=64 * 1024,
        multipart_chunk_size=32 * 1024,
        max_json_body=64 * 1024,
        max_commit_body=256 * 1024,
        max_lfs_file_size=10 * MiB,
        max_lfs_objects_per_batch=5,
        max_lfs_parts=50,
        max_upload_sessions=4,
        upload_session_ttl=1.0,
        body_timeout=0.5,
    ) as hub:
        HfApi(endpoint=hub.endpoint, token="t").create_repo("user/big", repo_type="dataset")
        yield hub


def _batch(raw: RawClient, *objects: tuple[str, int], token: Any = True) -> Any:
    payload = {
        "operation": "upload",
        "transfers": ["basic", "multipart"],
        "objects": [{"oid": oid, "size": size} for oid, size in objects],
    }
    return raw.request("POST", BATCH, payload, token=token)


def test_json_and_commit_bodies_have_limits(small_hub: LocalHubServer, raw_client):
    raw = raw_client(small_hub.endpoint)
    big = {"paths": ["x" * 100] * 1000}
    assert raw.request("POST", "/api/datasets/user/big/paths-info/main", big).status == 413
    line = json.dumps({"key": "header", "value": {"summary": "s" * 300_000}})
    answer = raw.request(
        "POST", "/api/datasets/user/big/commit/main", line, content_type="application/x-ndjson"
    )
    assert answer.status == 413
    assert "error" in answer.json()


def test_lfs_uploads_stop_at_the_announced_size(small_hub: LocalHubServer, raw_client):
    raw = raw_client(small_hub.endpoint)
    content = os.urandom(1000)
    oid = hashlib.sha256(content).hexdigest()
    href = _batch(raw, (oid, 1000)).json()["objects"][0]["actions"]["upload"]["href"]
    path = "/" + href.split("/", 3)[3]
    assert _send(small_hub.endpoint, "PUT", path, 5000, {}) in (0, 413)
    assert not (small_hub.data_dir / "blobs" / oid[:2] / oid).exists()
    answer = raw_client(small_hub.endpoint).request("PUT", path, content, content_type=None)
    assert answer.status == 200, answer.body


def test_lfs_batch_caps_size_parts_objects_and_sessions(small_hub: LocalHubServer, raw_client):
    raw = raw_client(small_hub.endpoint)
    # The amplification: a tiny request announcing a huge file gets a small error answer.
    huge = _batch(raw, ("a" * 64, 1_000_000 * 16 * MiB))
    assert huge.status == 200
    assert huge.json()["objects"][0]["error"]["code"] == 422
    assert len(huge.body) < 1000
    # Parts are capped by growing the chunk size, never by listing more URLs.
    upload = _batch(raw, ("b" * 64, 8 * MiB)).json()["objects"][0]["actions"]["upload"]
    parts = [key for key in upload["header"] if key.isdigit()]
    assert len(parts) <= 50
    assert int(upload["header"]["chunk_size"]) * len(parts) >= 8 * MiB
    too_many = _batch(raw, *[(f"{i:064x}", 10) for i in range(6)])
    assert too_many.status == 413
    # Sessions per token: one was used above; three more, then 429; another token is free.
    for i in range(3):
        assert _batch(raw, (f"{i + 100:064x}", 10)).status == 200
    assert _batch(raw, ("c" * 64, 10)).status == 429
    assert _batch(raw, ("c" * 64, 10), token="other-token").status == 200
    # Sessions expire, and with them their count.
    time.sleep(1.2)
    assert _batch(raw, ("d" * 64, 10)).status == 200


def test_a_slow_body_times_out(small_hub: LocalHubServer):
    with socket.create_connection(("127.0.0.1", small_hub.port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/repos/create HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: Bearer t\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"name":'
        )
        began = time.monotonic()
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        waited = time.monotonic() - began
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert waited < 8  # closed by the server, not by the client's timeout


def test_the_token_is_checked_before_the_body_is_read(tmp_path: Path):
    with LocalHubServer(tmp_path / "hub", token=TOKEN) as hub:
        with socket.create_connection(("127.0.0.1", hub.port), timeout=10) as sock:
            sock.sendall(
                b"POST /api/datasets/user/x/commit/main HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/x-ndjson\r\nContent-Length: 1073741824\r\n\r\n"
            )
            answer = sock.recv(65536)  # no body sent: the answer must not wait for it
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


def test_commits_store_their_changes_and_expand_walks_changes(local_hub, hub_api: HfApi):
    repo = "user/history"
    hub_api.create_repo(repo, repo_type="dataset")
    files = [CommitOperationAdd(f"d{i % 20}/f{i}.txt", b"%d" % i) for i in range(400)]
    first = hub_api.create_commit(repo, files, commit_message="many", repo_type="dataset")
    commits = [first.oid]
    for i in range(5):
        change = [CommitOperationAdd(f"d{i}/f{i}.txt", b"new %d" % i)]
        commits.append(
            hub_api.create_commit(repo, change, commit_message=f"c{i}", repo_type="dataset").oid
        )
    deleted = hub_api.create_commit(
        repo, [CommitOperationDelete("d7/f7.txt")], commit_message="rm", repo_type="dataset"
    )
    folder = local_hub.data_dir / "repos" / "datasets" / "user" / "history" / "commits"
    sizes = {path.stem: path.stat().st_size for path in folder.iterdir()}
    assert sizes[commits[-1]] < 2000 < sizes[first.oid]
    tree = hub_api.list_repo_tree(repo, repo_type="dataset", expand=True)
    last = {entry.path: entry.last_commit.oid for entry in tree if entry.last_commit}
    assert last["d0"] == commits[1]
    assert last["d4"] == commits[5]
    assert last["d7"] == deleted.oid
    assert last["d19"] == first.oid
    sub = hub_api.list_repo_tree(repo, "d3", repo_type="dataset", expand=True)
    by_path = {e.path: e.last_commit.oid for e in sub if isinstance(e, RepoFile) and e.last_commit}
    assert by_path["d3/f3.txt"] == commits[4]
    assert by_path["d3/f23.txt"] == first.oid
    info = hub_api.dataset_info(repo, revision=commits[2])
    assert len(info.siblings or []) == 401


def test_crash_leftovers_are_swept_at_start_and_periodically(tmp_path: Path, raw_client):
    data = tmp_path / "hub"
    with LocalHubServer(data):
        pass
    old = time.time() - 3600
    for leftover in (data / "tmp" / "killed-writer", data / "uploads" / ("e" * 32)):
        leftover.parent.mkdir(exist_ok=True)
        if leftover.parent.name == "uploads":
            leftover.mkdir()
            (leftover / "part-00001").write_bytes(b"x" * 1000)
            os.utime(leftover / "part-00001", (old, old))
        else:
            leftover.write_bytes(b"x" * 1000)
        os.utime(leftover, (old, old))
    with LocalHubServer(data, stale_after=0.3, sweep_interval=0.2) as hub:
        assert list((data / "tmp").iterdir()) == []
        assert list((data / "uploads").iterdir()) == []
        (data / "tmp" / "later").write_bytes(b"x")
        time.sleep(0.6)
        raw = raw_client(hub.endpoint)
        deadline = time.monotonic() + 5
        while (data / "tmp" / "later").exists() and time.monotonic() < deadline:
            raw.request("GET", "/api/datasets")
            time.sleep(0.1)
        assert not (data / "tmp" / "later").exists()
