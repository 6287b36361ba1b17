"""A dagster-webserver started for one test: its GraphQL API, then stopped with its children."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests import _fast

LOADED = """
query {
  workspaceOrError {
    ... on Workspace { locationEntries { name loadStatus
      locationOrLoadError { __typename ... on PythonError { message } } } }
  }
}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Webserver:
    """``dagster-webserver -w workspace.yaml`` on a free loopback port, in its own session."""

    def __init__(
        self, project: Path, dagster_home: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.project = project
        self.dagster_home = dagster_home
        self.env = dict(env or {})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None
        self._log = dagster_home / f"webserver-{self.port}.log"

    def __enter__(self) -> Self:
        executable = Path(sys.executable).with_name("dagster-webserver")
        env = {**os.environ, **self.env, "DAGSTER_HOME": str(self.dagster_home)}
        with self._log.open("wb") as log:
            self._process = _fast.Popen(  # the installed script, forked from the warm server
                [
                    sys.executable,
                    str(executable),
                    "-w",
                    "workspace.yaml",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                ],
                cwd=self.project,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its code server is in this process group
            )
        try:
            self._wait_until_loaded(timeout=90)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def query(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``data`` of a GraphQL query; errors raise with the server's message."""
        body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
        request = urllib.request.Request(
            f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            payload = json.loads(response.read())
        if payload.get("errors"):
            raise AssertionError(f"GraphQL errors: {payload['errors']}")
        return payload["data"]

    def log(self) -> str:
        return self._log.read_text(errors="replace")

    def _wait_until_loaded(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise AssertionError(f"dagster-webserver exited:\n{self.log()}")
            try:
                entries = self.query(LOADED)["workspaceOrError"]["locationEntries"]
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
                continue
            if entries and all(entry["loadStatus"] == "LOADED" for entry in entries):
                errors = [
                    entry["locationOrLoadError"]
                    for entry in entries
                    if entry["locationOrLoadError"]["__typename"] == "PythonError"
                ]
                if errors:
                    raise AssertionError(f"the code location failed to load: {errors}")
                return
            time.sleep(0.2)
        raise AssertionError(f"dagster-webserver did not load within {timeout}s:\n{self.log()}")
