"""Fixtures for the cache tests: a private default cache, and one store root per backend."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dagster_ds.cache import enable_caching
from tests import _fast

WORKER = Path(__file__).with_name("_worker.py")


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Never touch ~/.cache: the default root is a temporary folder; caching is on."""
    monkeypatch.setenv("DAGSTER_DS_CACHE", str(tmp_path / "default-cache"))
    enable_caching()
    yield
    enable_caching()


@pytest.fixture(params=["local", "file", "memory"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A cache root on each backend: a local path, a file:// URL, and memory://."""
    if request.param == "local":
        yield str(tmp_path / "cache")
    elif request.param == "file":
        yield f"file://{tmp_path / 'cache'}"
    else:
        name = f"cache-{uuid.uuid4().hex}"
        yield f"memory://{name}"
        from fsspec.implementations.memory import MemoryFileSystem

        MemoryFileSystem().rm(f"/{name}", recursive=True)


def fingerprint(number: int) -> str:
    return f"{number:032x}"


def run_worker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run tests/cache/_worker.py in a fresh interpreter; fail with its output if it fails."""
    result = _fast.run(
        [sys.executable, str(WORKER), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        check=False,
    )
    assert result.returncode == 0, f"worker {args} failed:\n{result.stdout}\n{result.stderr}"
    return result


def start_worker(*args: str) -> subprocess.Popen[str]:
    return _fast.Popen(
        [sys.executable, str(WORKER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
