"""Raw HTTP access to a local Hub on one keep-alive connection, to test what clients never send.

Also `hub_serve`: ``dagster-ds hub serve`` in the test's process, for the refusals
that end it before it serves.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner, Result

from dagster_ds.cli import main
from dagster_ds.hub.server import LocalHubServer


class _Connection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        # Headers and body go out in two writes: without this, Nagle's algorithm and the
        # peer's delayed ACK add 40 ms to every request.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class RawClient:
    """One keep-alive HTTP connection to a server; fails if the server drops it silently."""

    def __init__(self, endpoint: str, token: str | None = "raw-token", timeout: float = 10) -> None:
        parts = urlsplit(endpoint)
        self.host = parts.netloc
        self.token = token
        self.connection = _Connection(parts.hostname or "", parts.port, timeout=timeout)
        self.requests = 0
        self._close_announced = False

    def request(
        self,
        method: str,
        path: str,
        body: bytes | str | Any = b"",
        headers: dict[str, str] | None = None,
        *,
        token: str | bool | None = True,
        content_type: str | None = "application/json",
    ) -> Answer:
        if not isinstance(body, bytes | str):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        sent = {"Host": self.host}
        if content_type is not None and method not in ("GET", "HEAD"):
            sent["Content-Type"] = content_type
        bearer = self.token if token is True else token or None
        if bearer:
            sent["Authorization"] = f"Bearer {bearer}"
        sent.update(headers or {})
        socket_before = self.connection.sock
        self.connection.request(method, path, body=body, headers=sent)
        response = self.connection.getresponse()
        data = response.read()
        closing = response.getheader("connection", "").lower() == "close"
        if socket_before is not None and not self._close_announced and not closing:
            # A reconnect means the server closed the previous keep-alive connection silently.
            assert self.connection.sock is socket_before, f"connection dropped before {path}"
        self._close_announced = closing
        if closing:
            # Only a body the server stopped reading may end the connection.
            assert response.status in (408, 413), f"{method} {path} -> {response.status} closed"
            self.connection.close()
        self.requests += 1
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, data)

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def raw_client() -> Iterator[Callable[..., RawClient]]:
    """``raw_client(endpoint, token=...)``: `RawClient`s closed at the end of the test."""
    made: list[RawClient] = []

    def make(endpoint: str, token: str | None = "raw-token") -> RawClient:
        made.append(RawClient(endpoint, token))
        return made[-1]

    yield make
    for client in made:
        client.close()


@pytest.fixture
def raw(local_hub: LocalHubServer) -> Iterator[RawClient]:
    """A `RawClient` of the `local_hub` (any-token mode), with a token."""
    client = RawClient(local_hub.endpoint)
    yield client
    client.close()


@pytest.fixture
def hub_serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Result]]:
    """Run ``dagster-ds hub serve ARGS`` here, with $DAGSTER_DS_HUB_TOKEN as given.

    For the refusals, which end the command before it serves: no process of its own
    (each costs seconds of imports). ``token_env`` sets $DAGSTER_DS_HUB_TOKEN, None
    unsets it. The SIGINT and SIGTERM handlers the command installs are undone after
    the test, so Ctrl+C still stops pytest.
    """
    saved = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}

    def serve(*args: str, token_env: str | None = None) -> Result:
        if token_env is None:
            monkeypatch.delenv("DAGSTER_DS_HUB_TOKEN", raising=False)
        else:
            monkeypatch.setenv("DAGSTER_DS_HUB_TOKEN", token_env)
        return CliRunner().invoke(main, ["hub", "serve", *args], catch_exceptions=False)

    yield serve
    for number, handler in saved.items():
        signal.signal(number, handler)
