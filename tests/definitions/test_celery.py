"""The example pipeline under Dagster's celery executor: two workers, one S3 store.

Real parts, all on loopback and free ports: Debian's ``redis-server`` as the broker
and result backend, two ``celery -A dagster_celery.app worker`` processes standing in
for two machines, moto's S3 server holding the dataset store and the dataset cache
(``DAGSTER_DS_STORAGE`` / ``DAGSTER_DS_CACHE``, the example's own settings), and a
persistent instance in a temporary folder. The example's code is unchanged
(tests/definitions/_celery_job.py only sets the executor).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from dagster_ds.orchestration import DatasetStore
from tests import _fast
from tests.conftest import AWS_TEST_ENV, REPO_ROOT, moto_s3, new_dagster_home, s3_requests
from tests.definitions.conftest import Example
from tests.webserver import free_port

ASSETS = ["paragraphs", "test", "tokenized", "train"]
PUBLISHED = "python_docs_hub"  # publishes train and test in one Hub commit
BUCKET = "datasets"
WORKERS = ("first", "second")
READY_WITHIN = 120.0  # seconds for a worker to import dagster and connect; bounded loops only
# Each worker reaches the store with S3 settings from its environment alone, as on another
# machine; botocore reads an S3-compatible server's address from AWS_ENDPOINT_URL_S3.
# One task at a time per worker, acknowledged only when done: a busy worker holds no
# second step, so steps that can run together run on both workers.
CELERY_CONFIG = """\
broker_url = {broker!r}
result_backend = {broker!r}
worker_prefetch_multiplier = 1
task_acks_late = True
worker_hijack_root_logger = False
"""


@dataclass(frozen=True)
class CeleryRuns:
    instance: dg.DagsterInstance
    endpoint: str
    first: dg.ExecuteJobResult
    second: dg.ExecuteJobResult
    #: The S3 requests each run made.
    requests: tuple[list[str], list[str]]


def _redis_server() -> str:
    """The redis-server binary; missing, the test fails under CI=true and skips elsewhere."""
    found = shutil.which("redis-server")
    if found:
        return found
    reason = (
        "redis-server is not installed (`make test` installs it when run as root with apt-get;"
        " otherwise: sudo apt-get install -y redis-server)"
    )
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise AssertionError(f"{reason}; CI=true makes the celery executor test mandatory")
    pytest.skip(reason)


def _start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``command`` in a process group of its own; a Python script's forked from the warm server."""
    with log.open("wb") as out:
        return _fast.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: teardown ends its children too
        )


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """End processes started by `_start`, and everything in their process groups."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 0.5  # then SIGKILL: they hold nothing the tests need
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:  # still running, or a forked child left behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10.0)


def _wait_for(logs: list[Path], text: str, processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        for process, log in zip(processes, logs, strict=True):
            if process.poll() is not None:
                raise AssertionError(f"{log.name} exited:\n{log.read_text()[-3000:]}")
        if all(text in log.read_text() for log in logs):
            return
        time.sleep(0.1)
    raise AssertionError(
        f"not {text!r} within {READY_WITHIN}s:\n"
        + "\n".join(f"{log.name}:\n{log.read_text()[-2000:]}" for log in logs)
    )


@pytest.fixture(scope="module")
def celery_runs(dagster_homes: Path) -> Iterator[CeleryRuns]:
    """The example refreshed twice on two celery workers, its store and cache on S3."""
    redis = _redis_server()
    from celery.exceptions import DuplicateTaskNameWarning

    from tests.definitions._celery_job import celery_refresh_job

    home = new_dagster_home(dagster_homes)
    logs = Path(tempfile.mkdtemp(prefix="dagster-ds-celery-"))
    broker = f"redis://127.0.0.1:{free_port()}/0"
    (logs / "dagster_celery_config.py").write_text(CELERY_CONFIG.format(broker=broker))
    moto_port = free_port()
    endpoint = f"http://127.0.0.1:{moto_port}"
    storage = {
        "DAGSTER_DS_STORAGE": f"s3://{BUCKET}/store",
        "DAGSTER_DS_CACHE": f"s3://{BUCKET}/cache",
    }
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("HF_TOKEN", "DAGSTER_DS_EXAMPLE_REPO", "HF_ENDPOINT")
    }
    env.update(AWS_TEST_ENV)
    env.update(storage)
    env.update(
        AWS_ENDPOINT_URL_S3=endpoint,
        DAGSTER_HOME=str(home),
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        DAGSTER_DS_DISABLE_PROGRESS_BARS="1",
        PYTHONPATH=os.pathsep.join([str(logs), str(REPO_ROOT)]),
    )
    celery = Path(sys.executable).with_name("celery")
    with contextlib.ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        stack.callback(shutil.rmtree, logs, ignore_errors=True)
        stack.callback(shutil.rmtree, home, ignore_errors=True)
        for name in ("HF_TOKEN", "DAGSTER_DS_EXAMPLE_REPO", "HF_ENDPOINT"):
            patch.delenv(name, raising=False)
        for name, value in {**AWS_TEST_ENV, **storage}.items():
            patch.setenv(name, value)
        patch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
        patch.setenv("DAGSTER_HOME", str(home))

        # The executor polls its tasks once a second (dagster_celery.core_execution_loop);
        # a tenth of that takes seconds off each run's chain of eight steps.
        patch.setattr("dagster_celery.core_execution_loop.TICK_SECONDS", 0.1)
        requests = stack.enter_context(s3_requests())
        stack.enter_context(moto_s3(BUCKET, moto_port))

        port = broker.rsplit(":", 1)[1].split("/")[0]
        server = _start(
            [redis, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            logs / "redis.log",
            env,
        )
        processes = [server]
        stack.callback(_stop, processes)
        workers = []
        for name in WORKERS:
            worker = _start(
                [
                    sys.executable,
                    str(celery),
                    "-A",
                    "dagster_celery.app",
                    "worker",
                    "-Q",
                    "dagster",
                    "--concurrency=1",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    "--loglevel=INFO",
                    "-n",
                    f"{name}@%h",
                    # The job's module (and with it dagster_ds and the example) is imported
                    # before the pool forks, while the other worker starts: not on a step.
                    "--include",
                    "tests.definitions._celery_job",
                ],
                logs / f"worker-{name}.log",
                env,
            )
            processes.append(worker)
            workers.append(worker)
        _wait_for([logs / f"worker-{name}.log" for name in WORKERS], " ready.", workers)

        run_config = {"execution": {"config": {"broker": broker, "backend": broker}}}
        with dg.DagsterInstance.from_config(str(home)) as instance, warnings.catch_warnings():
            # dagster_celery registers its task again for each step it submits (executor.py,
            # _submit_task), which celery 5.7 warns about: not ours, and harmless.
            warnings.filterwarnings("ignore", category=DuplicateTaskNameWarning)
            job = dg.reconstructable(celery_refresh_job)
            before = requests.count
            first = dg.execute_job(job, instance=instance, run_config=run_config)
            between = requests.count
            second = dg.execute_job(job, instance=instance, run_config=run_config)
            made = (requests.lines[before:between], requests.lines[between:])
            for result in (first, second):
                if not result.success:
                    raise AssertionError(f"a celery run failed:\n{_failures(result, logs)}")
            yield CeleryRuns(instance, endpoint, first, second, made)


def _failures(result: dg.ExecuteJobResult, logs: Path) -> str:
    errors = [
        f"{event.step_key}: {event.event_specific_data.error.to_string()}"  # type: ignore[union-attr]
        for event in result.all_events
        if event.is_step_failure
    ]
    tails = [f"{log.name}:\n{log.read_text()[-3000:]}" for log in sorted(logs.glob("*.log"))]
    return "\n".join(errors + tails)


def _materializations(result: dg.ExecuteJobResult) -> dict[str, dict[str, Any]]:
    return {
        event.materialization.asset_key.to_user_string(): {
            key: value.value for key, value in event.materialization.metadata.items()
        }
        for event in result.get_asset_materialization_events()
    }


def _workers_by_step(result: dg.ExecuteJobResult) -> dict[str, str]:
    """Which celery worker ran each step (the executor's engine event names it)."""
    found: dict[str, str] = {}
    for event in result.all_events:
        data = event.event_specific_data
        metadata = getattr(data, "metadata", None) or {}
        worker = metadata.get("Celery worker")
        if event.event_type_value == "ENGINE_EVENT" and worker is not None and event.step_key:
            found[event.step_key] = str(worker.value)
    return found


def _s3_store(runs: CeleryRuns) -> DatasetStore:
    return DatasetStore(f"s3://{BUCKET}/store", {"endpoint_url": runs.endpoint})


@pytest.mark.slow
def test_the_example_runs_on_two_celery_workers_with_its_store_on_s3(
    celery_runs: CeleryRuns,
) -> None:
    result = celery_runs.first
    workers = _workers_by_step(result)
    assert set(workers) >= set(ASSETS)
    assert {name.split("@")[0] for name in workers.values()} == set(WORKERS)
    assert workers["train"] != workers["test"]  # the two splits ran at once, one per worker
    assert [event.asset_key for event in result.get_asset_observation_events()] == [
        dg.AssetKey("python_docs")
    ]
    materialized = _materializations(result)
    assert sorted(materialized) == sorted([*ASSETS, PUBLISHED])
    published = materialized.pop(PUBLISHED)
    assert {metadata["dagster_ds/cache"] for metadata in materialized.values()} == {"miss"}
    assert materialized["paragraphs"]["dagster/row_count"] == 1093
    assert (
        materialized["train"]["dagster/row_count"] + materialized["test"]["dagster/row_count"]
        == 1093
    )
    for metadata in materialized.values():
        assert metadata["dagster_ds/path"].startswith(f"s3://{BUCKET}/store/")
    assert published["dagster_ds/hub_push"] == "pushed"
    # Nothing was loaded into one machine's folders: the source too went to the S3 store.
    local = Path(celery_runs.instance.storage_directory()) / "dagster_ds"
    assert not local.exists(), sorted(path.name for path in local.rglob("*"))


@pytest.mark.slow
def test_a_second_refresh_is_all_cache_hits_across_workers(celery_runs: CeleryRuns) -> None:
    first, second = _materializations(celery_runs.first), _materializations(celery_runs.second)
    assert sorted(second) == sorted([*ASSETS, PUBLISHED])
    published = second.pop(PUBLISHED)
    for key, metadata in second.items():
        assert metadata["dagster_ds/cache"] == "hit", key
        assert metadata["dagster_ds/recipe"] == first[key]["dagster_ds/recipe"]
        assert metadata["dagster_ds/bytes_written"] == 0, key
    assert published["dagster_ds/hub_push"] == "skipped (unchanged)"
    workers = _workers_by_step(celery_runs.second)
    assert {name.split("@")[0] for name in workers.values()} == set(WORKERS)


@pytest.mark.slow
def test_a_refresh_with_nothing_changed_makes_few_s3_requests(celery_runs: CeleryRuns) -> None:
    # Each skipped step opens the versions it checks and loads (a lease, the eviction
    # fence, the manifest, each data file's size): 238 requests here, 435 before the
    # stored sizes and records were read from manifests alone and small files read in
    # one GET. A bound, not the count: a retry must not fail the test.
    first, second = celery_runs.requests
    assert len(second) <= 280, "\n".join(second)
    assert len(second) < len(first) / 2


@pytest.mark.slow
def test_the_rows_on_s3_equal_the_in_process_runs(
    celery_runs: CeleryRuns, example: Example
) -> None:
    on_s3 = _s3_store(celery_runs)
    local = DatasetStore(str(example.home / "storage" / "dagster_ds"))
    celery, in_process = _materializations(celery_runs.second), _materializations(example.second)
    for key in ASSETS:
        fingerprint = celery[key]["dagster_ds/recipe"]
        assert fingerprint == in_process[key]["dagster_ds/recipe"], key
        assert (
            celery[key]["dagster_ds/data_version"] == (in_process[key]["dagster_ds/data_version"])
        )
        rows = on_s3.load(dg.AssetKey(key), fingerprint)
        expected = local.load(dg.AssetKey(key), fingerprint)
        assert rows.fingerprint == expected.fingerprint
        assert rows.to_dict() == expected.to_dict(), key
        del rows, expected
