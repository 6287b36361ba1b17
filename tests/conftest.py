"""Fixtures shared by the whole suite."""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests import _fast
from tests.webserver import free_port

# Every temporary file of a test process goes under one folder, removed when the process
# that made it exits: doctests' `tempfile.mkdtemp()`, children's files, pytest's own
# `tmp_path`s (test workers inherit TMPDIR, so theirs nest in the controller's). Before,
# each run of the suite left hundreds of folders in /tmp.
_SESSION_TMP = tempfile.mkdtemp(prefix="dagster-ds-session-")
_SESSION_PID = os.getpid()
tempfile.tempdir = _SESSION_TMP
os.environ["TMPDIR"] = _SESSION_TMP


@atexit.register
def _remove_session_tmp() -> None:
    if os.getpid() == _SESSION_PID:  # not in a forked child, which runs the same handlers
        shutil.rmtree(_SESSION_TMP, ignore_errors=True)


# huggingface_hub reads these at import time. Telemetry off: its user-agent code
# otherwise fetches a registry from its default endpoint (huggingface.co). Xet off:
# the local Hub speaks LFS only.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_XET", "1")

# The anchor (datasets, a test-only oracle) reads its cache folder at import time:
# keep it in a temporary folder for the session, never the user's.
_ANCHOR_CACHE = tempfile.mkdtemp(prefix="dagster-ds-anchor-")
os.environ.setdefault("HF_DATASETS_CACHE", _ANCHOR_CACHE)
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

pytest_plugins = ["dagster_ds.testing.pytest_plugin", "tests._schedule"]

REPO_ROOT = Path(__file__).resolve().parent.parent

RunPython = Callable[..., str]

if TYPE_CHECKING:
    from dagster_ds.testing import LocalHubServer


@pytest.hookimpl(trylast=True)
def pytest_unconfigure() -> None:
    """Spare the test process a full garbage collection as it exits.

    Every fixture is finalized by now. A test worker that loaded Dagster, torch and the
    example spends seconds collecting them all at interpreter exit (1.3 s for two test
    files, measured); the objects it holds are exempted, and the process exits in 0.2 s.
    """
    gc.freeze()


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test gets its own cache folder, never the user's."""
    monkeypatch.setenv("DAGSTER_DS_CACHE", str(tmp_path_factory.mktemp("cache")))


# No capture of step output: Dagster's default starts two `tail` processes per step,
# each watched by a Python process of its own; no test reads step output. Every
# instance of the tests has it: `dagster_homes`' template and the example's instance.
NO_STEP_OUTPUT = {
    "compute_logs": {
        "module": "dagster._core.storage.noop_compute_log_manager",
        "class": "NoOpComputeLogManager",
    },
}
# Dagster instance settings of the `instance` fixtures (runs in the test's process): one
# SQLite event log for all runs (Dagster's default creates, then stamps with alembic, a
# database per run: most of a short run's time). The example (tests/definitions), the
# Dask and concurrency tests, and every test whose runs happen in other processes keep
# Dagster's default event log.
QUICK_INSTANCE = {
    "event_log_storage": {
        "module": "dagster._core.storage.event_log",
        "class": "ConsolidatedSqliteEventLogStorage",
        "config": {"base_dir": {"env": "DAGSTER_HOME"}},
    },
    **NO_STEP_OUTPUT,
}


@pytest.fixture(scope="session")
def dagster_homes() -> Iterator[Path]:
    """Where DAGSTER_HOMEs go: a memory file system when there is one (SQLite syncs every
    event: on a disk a run takes seconds), with an initialised instance to copy."""
    shm = Path("/dev/shm")
    base = Path(
        tempfile.mkdtemp(prefix="dagster-ds-tests-", dir=shm if os.access(shm, os.W_OK) else None)
    )
    template = base / "template"
    template.mkdir()
    import dagster as dg

    with dg.instance_for_test(temp_dir=str(template), overrides=QUICK_INSTANCE):
        pass  # creates the SQLite schemas once: the `QUICK_INSTANCE` event log, then
    with dg.instance_for_test(temp_dir=str(template)):
        pass  # Dagster's defaults (and its dagster.yaml, which gets `NO_STEP_OUTPUT`)
    settings = template / "dagster.yaml"
    settings.write_text(settings.read_text() + yaml.safe_dump(NO_STEP_OUTPUT))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def new_dagster_home(homes: Path) -> Path:
    """A copy of the initialised instance in ``homes`` (see `dagster_homes`)."""
    home = Path(tempfile.mkdtemp(dir=homes, prefix="home-"))
    shutil.copytree(homes / "template", home, dirs_exist_ok=True)
    return home


@pytest.fixture
def dagster_home(dagster_homes: Path) -> Iterator[Path]:
    """A fresh, persistent DAGSTER_HOME (SQLite storage, telemetry off)."""
    home = new_dagster_home(dagster_homes)
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def run_python() -> RunPython:
    """Run Python source in a fresh interpreter and return what it printed.

    Keyword arguments: ``cwd`` (the working directory), ``env`` (extra
    environment variables), ``path`` (folders prepended to PYTHONPATH), ``cold``
    (start the interpreter from nothing: for a claim about what it imports; otherwise
    the child is forked from `tests._fast`'s server, which has the heavy third-party
    libraries imported).
    """

    def run(
        source: str,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        path: list[Path] | None = None,
        cold: bool = False,
    ) -> str:
        environment = dict(os.environ)
        environment.update(env or {})
        python_path = [str(p) for p in path or []] + [str(REPO_ROOT)]
        environment["PYTHONPATH"] = os.pathsep.join(python_path)
        # Cached bytecode is read, never written: a test that edits a module and runs it
        # again must not get the bytecode of the version before (Python tells them apart
        # by the source's size and mtime in whole seconds: an edit of the same size in
        # the same second would not be seen).
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        completed = (subprocess.run if cold else _fast.run)(
            [sys.executable, "-c", textwrap.dedent(source)],
            cwd=cwd,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if completed.returncode != 0:
            raise AssertionError(f"subprocess failed:\n{completed.stderr}")
        return completed.stdout.strip()

    return run


@pytest.fixture
def hub_api(local_hub: LocalHubServer) -> Any:
    """An HfApi client of the `local_hub`, with a token (any token is accepted)."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=local_hub.endpoint, token="test-token")


@pytest.fixture
def anchor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The anchor (``datasets``) as a test oracle: offline, its cache in the test's folder."""
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    # The anchor sleeps 5 s after interleaving Parquet shards (an Arrow thread-shutdown
    # workaround): irrelevant to the results, so not waited for here.
    monkeypatch.setattr(datasets.config, "SLEEP_TIME_ON_THREADS_SHUTDOWN", 0)  # pyright: ignore[reportAttributeAccessIssue]
    return datasets


@pytest.fixture(name="datasets")
def datasets_module(anchor: ModuleType) -> ModuleType:
    """`anchor` under the name the anchor-API tests give it (``datasets``)."""
    return anchor


@pytest.fixture
def hf_cache(tmp_path: Path) -> Path:
    """A private huggingface_hub download cache for one test."""
    return tmp_path / "hf-cache"


# werkzeug's line for a request: '... "GET /bucket/key HTTP/1.1" 200 -', coloured by status.
_REQUEST_LINE = re.compile(r'"(?:\x1b\[[0-9;]*m)*([A-Z]+) \S+ [^"]*" (\d{3})')


class S3Requests(logging.Handler):
    """The requests moto's servers in this process served (each logs one record)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    @property
    def count(self) -> int:
        return len(self.lines)

    def made(self) -> list[tuple[str, int]]:
        """(method, status) of each request, in order."""
        found = (_REQUEST_LINE.search(line) for line in self.lines)
        return [(match[1], int(match[2])) for match in found if match is not None]


@contextlib.contextmanager
def s3_requests() -> Iterator[S3Requests]:
    """Record the requests moto's servers serve meanwhile, keeping them out of the output."""
    log, requests = logging.getLogger("werkzeug"), S3Requests()
    level, propagate = log.level, log.propagate
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(requests)
    try:
        yield requests
    finally:
        log.removeHandler(requests)
        log.setLevel(level)
        log.propagate = propagate


# What a client of the test S3 server needs in its environment (moto accepts any keys).
AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@contextlib.contextmanager
def moto_s3(bucket: str, port: int | None = None, **options: Any) -> Iterator[str]:
    """moto's S3 server on loopback with an empty ``bucket``; yields its endpoint URL.

    moto keeps one state per process, shared by every server in it (a session's server
    lives beside a test's): the bucket is removed at the end, and nothing resets that
    state, which would empty the other servers' buckets too. ``options`` go to s3fs
    (credentials, when the environment has none).
    """
    import s3fs
    from moto.server import ThreadedMotoServer

    _fast.share_botocore_data()  # the S3 model parsed once per process, not per filesystem
    port = port if port is not None else free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        fs = s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True, **options)
        fs.mkdir(bucket)
        try:
            yield endpoint
        finally:
            fs.rm(bucket, recursive=True)
    finally:
        _stop_at_once(server)


def _stop_at_once(server: Any) -> None:
    """Stop a `ThreadedMotoServer` without waiting out its serve loop's half-second poll.

    Its loop looks for a stop request each time ``select`` returns: after 0.5 s idle, or at
    once when a connection arrives. A connection is made until the loop has seen the request
    (one wake-up suffices unless it came just before the request was set).
    """
    import socket
    import threading

    wsgi = server._server  # pyright: ignore[reportPrivateUsage]
    stopping = threading.Thread(target=wsgi.shutdown)
    stopping.start()
    while stopping.is_alive():
        with contextlib.suppress(OSError):
            socket.create_connection(wsgi.server_address[:2], timeout=5).close()
        stopping.join(0.05)
    server.stop()  # its thread joined; the loop has ended, so this returns at once
    wsgi.server_close()


@pytest.fixture
def s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A local S3-compatible server (moto in server mode) with a bucket named 'datasets'."""
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    with moto_s3("datasets") as endpoint:
        yield endpoint
