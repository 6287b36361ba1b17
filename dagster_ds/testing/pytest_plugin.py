"""pytest fixtures for tests that talk to a Hugging Face Hub: a fresh local Hub per test.

Enable them in ``conftest.py``::

    pytest_plugins = ["dagster_ds.testing.pytest_plugin"]

Inside a test that uses `local_hub`, ``huggingface_hub`` targets the local Hub by
default (its ``ENDPOINT`` constant is patched, and ``HF_ENDPOINT`` is set for
subprocesses), Xet is disabled and so is telemetry (whose user-agent code would
otherwise fetch a registry from the default endpoint), so no request leaves the
machine by accident. Passing ``endpoint=local_hub.endpoint`` explicitly still
reads best.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import constants

from dagster_ds.hub.server import LocalHubServer

__all__ = ["local_hub"]


@pytest.fixture
def local_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalHubServer]:
    """A `LocalHubServer` accepting any token, with its data in the test's ``tmp_path``.

    Example:
        >>> def test_push(local_hub):  # doctest: +SKIP
        ...     api = HfApi(endpoint=local_hub.endpoint, token="anything")
        ...     api.create_repo("user/demo", repo_type="dataset")
        ...     assert api.repo_exists("user/demo", repo_type="dataset")
    """
    with LocalHubServer(tmp_path / "local-hub") as server:
        for name, value in server.client_env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
        monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
        monkeypatch.setattr(constants, "ENDPOINT", server.endpoint)
        monkeypatch.setattr(
            constants,
            "HUGGINGFACE_CO_URL_TEMPLATE",
            server.endpoint + "/{repo_id}/resolve/{revision}/{filename}",
        )
        yield server
