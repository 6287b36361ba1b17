"""One Dask cluster and one S3 server (moto) for the whole distributed test session."""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import moto_s3

ROWS_PER_FILE = 10


@pytest.fixture(autouse=True, scope="session")
def _distributed_installed() -> None:
    """Skip these tests without dask.distributed (imported when they run, not collected)."""
    pytest.importorskip("distributed")


@dataclass(frozen=True)
class S3:
    """The session's S3 server: its endpoint and the options to reach it."""

    endpoint: str
    bucket: str

    @property
    def options(self) -> dict[str, Any]:
        return {
            "endpoint_url": self.endpoint,
            "key": "testing",
            "secret": "testing",
        }

    def new_url(self) -> str:
        return f"s3://{self.bucket}/{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    """A local S3-compatible server (moto) on loopback, with one bucket."""
    with pytest.MonkeyPatch.context() as patch:
        # Read by every process that reaches the server (the cluster's workers inherit them).
        for name, value in {
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }.items():
            patch.setenv(name, value)
        with moto_s3("shards", key="testing", secret="testing") as endpoint:
            yield S3(endpoint, "shards")


@pytest.fixture(scope="session")
def cluster(s3: S3) -> Iterator[Any]:
    """Two worker processes of one thread. A worker that dies fails its task at once
    (allowed-failures 0), so a test sees the failure and the rerun."""
    import dask.config
    import distributed

    del s3  # started first: the workers inherit its environment

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), warnings.catch_warnings():
        # Without a dashboard the scheduler still serves /health on 8787, or on another
        # port when another process of this machine holds it (and says so): harmless.
        warnings.filterwarnings("ignore", "Port 8787 is already in use", UserWarning)
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            # A port of its own: on 8787, taken by another cluster, distributed leaks
            # the socket it tried (a ResourceWarning, an error on CPython 3.12+).
            dashboard_address=":0",
        )
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def client(cluster: Any) -> Iterator[Any]:
    import distributed

    with distributed.Client(cluster) as client:
        yield client


@pytest.fixture
def s3_cache(s3: S3) -> tuple[str, dict[str, Any]]:
    """A fresh cache folder on the S3 server: its URL and storage options."""
    return s3.new_url(), s3.options


@pytest.fixture
def shared_cache(tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A cache folder on this machine: shared storage for a local cluster, and fast. The
    failure tests use it (moto answers in ~25 ms a request here, ~30 requests a shard)."""
    return str(tmp_path / "shared-cache"), {}


def in_cache(cache: tuple[str, dict[str, Any]]) -> AbstractContextManager[None]:
    from dagster_ds.cache import cache_root

    return cache_root(cache[0], cache[1] or None)


def write_files(folder: Path, count: int, start: int = 0) -> list[str]:
    """``count`` JSON Lines files of `ROWS_PER_FILE` ids each, numbered from file ``start``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[str] = []
    for index in range(start, start + count):
        path = folder / f"part-{index:03d}.jsonl"
        ids = range(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE)
        path.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
        paths.append(str(path))
    return paths
