"""LocalHubServer lifecycle, persistence, the command line, and the public API."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from huggingface_hub import CommitOperationAdd, HfApi, hf_hub_download

import dagster_ds.hub.server
import dagster_ds.testing
from dagster_ds.hub.server import HubDataDirError, LocalHubServer, LocalHubStartError


def _refuses_connections(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_public_api_is_pinned():
    public = {n for n in vars(dagster_ds.testing) if not n.startswith("_")}
    assert dagster_ds.testing.__all__ == sorted(dagster_ds.testing.__all__)
    assert set(dagster_ds.testing.__all__) == public - {"pytest_plugin"}
    assert dagster_ds.testing.__all__ == ["LocalHubServer", "create_hub_app"]
    assert dagster_ds.testing.LocalHubServer is dagster_ds.hub.server.LocalHubServer


def test_server_package_api_is_pinned():
    server = dagster_ds.hub.server
    exported = {n for n, v in vars(server).items() if not n.startswith("_") and callable(v)}
    assert server.__all__ == sorted(server.__all__)
    assert set(server.__all__) == exported
    from dagster_ds.errors import DagsterDsError

    assert issubclass(server.LocalHubError, DagsterDsError)
    assert issubclass(server.HubUnauthorizedError, PermissionError)


def test_start_is_fast_and_stop_is_clean(tmp_path):
    server = LocalHubServer(tmp_path / "hub")
    with pytest.raises(LocalHubStartError, match="not started"):
        _ = server.port
    began = time.monotonic()
    server.start()
    assert time.monotonic() - began < 2
    port = server.port
    assert server.running
    assert server.endpoint == f"http://127.0.0.1:{port}"
    assert server.data_dir == tmp_path / "hub"
    assert not _refuses_connections(port)
    server.stop()
    assert not server.running
    assert _refuses_connections(port)
    assert not any(t.name == "dagster-ds-local-hub" for t in threading.enumerate())
    server.stop()  # stopping twice is harmless


def test_stop_closes_a_connection_whose_client_stopped_reading(tmp_path):
    """A download its client stopped reading is still buffered in the server at the stop:
    the stop closes its socket all the same. (It stayed open until garbage collection,
    and its ResourceWarning then failed whichever test was running.)"""
    server = LocalHubServer(tmp_path / "hub").start()
    api = HfApi(endpoint=server.endpoint, token="test-token")
    api.create_repo("user/big", repo_type="dataset")
    api.upload_file(
        path_or_fileobj=os.urandom(16 << 20),
        path_in_repo="big.bin",
        repo_id="user/big",
        repo_type="dataset",
    )
    with socket.socket() as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(("127.0.0.1", server.port))
        client.sendall(
            b"GET /datasets/user/big/resolve/main/big.bin HTTP/1.1\r\n"
            b"Host: 127.0.0.1\r\nAuthorization: Bearer test-token\r\n\r\n"
        )
        client.recv(1)  # the response has begun; the client reads no more of it until the stop
        server.stop()
        client.settimeout(5)
        received = 0
        with contextlib.suppress(ConnectionResetError):
            while chunk := client.recv(1 << 16):  # the rest in flight, then the end
                received += len(chunk)
    assert received < 16 << 20  # the server did not wait to send it all


def test_temporary_data_dir_is_removed_on_stop():
    with LocalHubServer() as server:
        data_dir = server.data_dir
        assert (data_dir / "hub.json").is_file()
    assert not data_dir.exists()


def test_taken_port_is_reported(tmp_path):
    with LocalHubServer(tmp_path / "a") as first:
        second = LocalHubServer(tmp_path / "b", port=first.port)
        with pytest.raises(LocalHubStartError, match=str(first.port)):
            second.start()


def test_refuses_a_foreign_data_dir(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(HubDataDirError, match="not a local Hub store"):
        LocalHubServer(tmp_path).start()


def test_repr_never_shows_the_token(tmp_path):
    with LocalHubServer(tmp_path / "hub", token="hunter2-token") as server:
        assert "hunter2-token" not in repr(server)
        assert server.token == "hunter2-token"


def test_data_survives_a_restart(tmp_path, hf_cache):
    data_dir = tmp_path / "hub"
    with LocalHubServer(data_dir) as server:
        api = HfApi(endpoint=server.endpoint, token="t")
        api.create_repo("user/demo", repo_type="dataset")
        commit = api.create_commit(
            "user/demo",
            [CommitOperationAdd("a.parquet", b"PAR1 lfs"), CommitOperationAdd("b.txt", b"b")],
            commit_message="add",
            repo_type="dataset",
        )
        api.create_branch("user/demo", branch="dev", repo_type="dataset")
    with LocalHubServer(data_dir) as server:
        api = HfApi(endpoint=server.endpoint, token="t")
        assert api.dataset_info("user/demo").sha == commit.oid
        assert [b.name for b in api.list_repo_refs("user/demo", repo_type="dataset").branches] == [
            "dev",
            "main",
        ]
        local = api.hf_hub_download(
            "user/demo", "a.parquet", repo_type="dataset", cache_dir=hf_cache
        )
        assert Path(local).read_bytes() == b"PAR1 lfs"


def test_cli_serve(tmp_path):
    env = {
        **os.environ,
        "DAGSTER_DS_HUB_TOKEN": "cli-secret-token",
        "PYTHONUNBUFFERED": "1",
    }
    dagster_ds_command = str(Path(sys.executable).parent / "dagster-ds")
    command = [
        dagster_ds_command,
        "hub",
        "serve",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path / "hub"),
    ]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        endpoint = ""
        for line in process.stdout:
            if line.startswith("HF_ENDPOINT="):
                endpoint = line.strip().split("=", 1)[1]
                break
        assert endpoint.startswith("http://127.0.0.1:")
        api = HfApi(endpoint=endpoint, token="cli-secret-token")
        api.create_repo("user/cli", repo_type="dataset")
        assert api.dataset_info("user/cli").id == "user/cli"
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    assert "Local Hub stopped." in out
    assert "cli-secret-token" not in out + err
    assert "POST /api/repos/create" in err  # one access-log line per request
    assert (tmp_path / "hub" / "repos" / "datasets" / "user" / "cli" / "refs.json").is_file()


def test_cli_reports_a_foreign_data_dir(tmp_path: Path, hub_serve: Callable[..., Result]):
    (tmp_path / "notes.txt").write_text("mine")
    result = hub_serve("--data-dir", str(tmp_path))
    assert result.exit_code == 1
    assert "is not a local Hub store" in result.stderr


def test_local_hub_fixture_makes_it_the_default_hub(local_hub, hf_cache):
    api = HfApi(token="t")  # no endpoint given
    assert api.endpoint == local_hub.endpoint
    api.create_repo("user/default", repo_type="dataset")
    api.upload_file(
        path_or_fileobj=b"x", path_in_repo="x.txt", repo_id="user/default", repo_type="dataset"
    )
    local = hf_hub_download("user/default", "x.txt", repo_type="dataset", cache_dir=hf_cache)
    assert Path(local).read_bytes() == b"x"
    assert os.environ["HF_ENDPOINT"] == local_hub.endpoint
    assert os.environ["HF_HUB_DISABLE_XET"] == "1"


def _serve_once(data_dir: Path, *args: str) -> str:
    """Start ``dagster-ds hub serve``, return the printed endpoint, stop it."""
    command = [str(Path(sys.executable).parent / "dagster-ds"), "hub", "serve"]
    process = subprocess.Popen(
        [*command, "--data-dir", str(data_dir), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("HF_ENDPOINT="):
                return line.strip().split("=", 1)[1]
        raise AssertionError(process.stderr.read() if process.stderr else "no endpoint")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=60)  # seconds under a loaded machine, not minutes
        except subprocess.TimeoutExpired:
            process.kill()  # never leak it into the next test
            process.communicate()
            raise


def test_cli_stable_port_is_the_one_recorded_in_the_data_dir(tmp_path):
    first = _serve_once(tmp_path / "hub", "--stable-port")
    again = _serve_once(tmp_path / "hub", "--stable-port")
    assert first == again
    recorded = json.loads((tmp_path / "hub" / "port.json").read_text())["port"]
    assert first == f"http://127.0.0.1:{recorded}"
